"""`powercontext memory forget` and `forget-scope` on the embedded store (--local)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from powercontext.cli import app

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
    }


def _json(env: dict[str, str], *args: str) -> Any:
    result = runner.invoke(app, [*args, "--local", "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_forget_asks_first_then_erases_and_records_the_local_actor(env: dict[str, str]) -> None:
    written = _json(env, "memory", "remember", "my pin is 9931 okapi", "--scope", "p")
    entry_id = written["entries"][0]["entry_id"]
    command = ["memory", "forget", entry_id, "--scope", "p", "--local"]

    declined = runner.invoke(app, command, input="n\n", env=env)
    assert declined.exit_code == 1 and "nothing was erased" in declined.output
    assert _json(env, "memory", "get", entry_id, "--scope", "p")["text"] == "my pin is 9931 okapi"

    confirmed = runner.invoke(app, command, input="y\n", env=env)
    assert confirmed.exit_code == 0, confirmed.output
    assert "erased 1 entries (1 versions)" in confirmed.output

    gone = runner.invoke(app, ["memory", "get", entry_id, "--scope", "p", "--local"], env=env)
    assert gone.exit_code != 0 and "erased" in gone.output and "okapi" not in gone.output
    changes = _json(env, "memory", "changes", "--scope", "p")["changes"]
    assert (changes[-1]["op"], changes[-1]["actor"]) == ("forget", "local")
    again = runner.invoke(app, [*command, "--yes"], env=env)
    assert again.exit_code != 0 and "erased" in again.output


def test_forget_scope_with_yes(env: dict[str, str]) -> None:
    for text in ("first okapi", "second okapi"):
        _json(env, "memory", "remember", text, "--scope", "q")
    result = _json(env, "memory", "forget-scope", "--scope", "q", "--yes", "--reason", "done")
    assert (result["erased_versions"], result["memory_ref"]["revision"]) == (2, 3)
    assert _json(env, "memory", "list", "--scope", "q", "--revision", "2")["entries"] == []
    page = _json(env, "memory", "search", "okapi", "--scope", "q", "--mode", "fts")
    assert page["hits"] == []
