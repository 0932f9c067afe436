"""examples/pydantic_ai_memory_tools.py run as a script (as docs/integrations.md shows) ends
with one `error:` line, not a traceback, when the model or the server cannot be used."""

from __future__ import annotations

import pytest
from examples.pydantic_ai_memory_tools import main


def test_a_model_without_its_key_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["openai:gpt-4.1-mini"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the model 'openai:gpt-4.1-mini' cannot be used")
    assert "OPENAI_API_KEY" in err and "Traceback" not in err


def test_a_server_that_does_not_answer_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # pydantic-ai's built-in `test` model calls every tool without a provider.
    monkeypatch.setenv("POWERCONTEXT_CLIENT_SERVER_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("POWERCONTEXT_CLIENT_MAX_RETRIES", "0")
    assert main(["test", "s"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach the PowerContext server at http://127.0.0.1:1")
