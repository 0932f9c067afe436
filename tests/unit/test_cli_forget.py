"""`powercontext memory forget` and `forget-scope` on the embedded store (--local)."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.cli import app
from tests.unit.cli_local import local_env, run_json, runner


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return local_env(tmp_path)


def test_forget_asks_first_then_erases_and_records_the_local_actor(env: dict[str, str]) -> None:
    written = run_json(env, "memory", "remember", "my pin is 9931 okapi", "--scope", "p")
    entry_id = written["entries"][0]["entry_id"]
    command = ["memory", "forget", entry_id, "--scope", "p", "--local"]

    declined = runner.invoke(app, command, input="n\n", env=env)
    assert declined.exit_code == 1 and "nothing was erased" in declined.output
    assert "Erase 1 entry of 'p' for good?" in declined.output
    assert (
        run_json(env, "memory", "get", entry_id, "--scope", "p")["text"] == "my pin is 9931 okapi"
    )

    confirmed = runner.invoke(app, command, input="y\n", env=env)
    assert confirmed.exit_code == 0, confirmed.output
    assert "erased 1 entry (1 version)" in confirmed.output

    gone = runner.invoke(app, ["memory", "get", entry_id, "--scope", "p", "--local"], env=env)
    assert gone.exit_code != 0 and "erased" in gone.output and "okapi" not in gone.output
    changes = run_json(env, "memory", "changes", "--scope", "p")["changes"]
    assert (changes[-1]["op"], changes[-1]["actor"]) == ("forget", "local")
    again = runner.invoke(app, [*command, "--yes"], env=env)
    assert again.exit_code != 0 and "erased" in again.output


def test_forget_scope_with_yes(env: dict[str, str]) -> None:
    for text in ("first okapi", "second okapi"):
        run_json(env, "memory", "remember", text, "--scope", "q")
    result = run_json(env, "memory", "forget-scope", "--scope", "q", "--yes", "--reason", "done")
    assert (result["erased_versions"], result["memory_ref"]["revision"]) == (2, 3)
    assert run_json(env, "memory", "list", "--scope", "q", "--revision", "2")["entries"] == []
    page = run_json(env, "memory", "search", "okapi", "--scope", "q", "--mode", "fts")
    assert page["hits"] == []


def test_a_keyed_forget_run_again_prints_its_first_result(env: dict[str, str]) -> None:
    written = run_json(env, "memory", "remember", "the alarm code is 2207", "--scope", "k")
    entry_id = written["entries"][0]["entry_id"]
    command = ["memory", "forget", entry_id, "--scope", "k", "--yes", "--idempotency-key", "f-1"]
    first = run_json(env, *command)
    assert run_json(env, *command) == first  # not 410 erased: the key answers
    scope_wide = ["memory", "forget-scope", "--scope", "k", "--yes", "--idempotency-key", "f-2"]
    assert run_json(env, *scope_wide) == run_json(env, *scope_wide)
