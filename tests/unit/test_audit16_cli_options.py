"""Audit 16 of the CLI: a bad option value of a write or a search is one error line naming the
option as typed (`--idempotency-key`, not the request's `idempotency_key`), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext.cli import app
from tests.unit.cli_local import local_env, runner


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return local_env(tmp_path)


def _citation(env: dict[str, str]) -> str:
    wrote = runner.invoke(app, ["memory", "remember", "x", "-s", "p", "--local", "--json"], env=env)
    assert wrote.exit_code == 0, wrote.output
    cited = json.loads(wrote.stdout)["entries"][0]["citation"]
    return f"{cited['memory_ref']['revision']}:{cited['entry_id']}:{cited['entry_version_id']}"


def _refused(env: dict[str, str], args: list[str], expected: str) -> None:
    result = runner.invoke(app, ["memory", *args, "-s", "p", "--local"], env=env)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.exception is None or isinstance(result.exception, SystemExit), "no traceback"
    assert result.stderr.startswith(f"error validation_error: {expected}: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["forget-scope", "--yes", "--idempotency-key", ""], "--idempotency-key"),
        (["forget-scope", "--yes", "--reason", "r" * 1025], "--reason"),
        (["forget", "e1", "--yes", "--idempotency-key", ""], "--idempotency-key"),
        (["search", "x", "--min-score", "nan"], "--min-score"),
        (["search-batch", "-", "--min-score", "inf"], "--min-score"),
    ],
)
def test_a_bad_option_value_names_the_option(
    env: dict[str, str], args: list[str], expected: str
) -> None:
    if args[0] == "search-batch":
        result = runner.invoke(
            app, ["memory", *args, "-s", "p", "--local"], env=env, input="deploy\n"
        )
        assert result.exit_code == 1 and result.stderr.startswith(
            f"error validation_error: {expected}: "
        ), result.output
        return
    _refused(env, args, expected)


@pytest.mark.parametrize(
    ("command", "extra", "expected"),
    [
        ("revise", ["y", "--kind", ""], "--kind"),
        ("revise", ["y", "--idempotency-key", ""], "--idempotency-key"),
        ("retire", ["--reason", "r" * 1025], "--reason"),
        ("reactivate", ["--idempotency-key", ""], "--idempotency-key"),
    ],
)
def test_a_bad_option_of_a_revision_write_names_the_option(
    env: dict[str, str], command: str, extra: list[str], expected: str
) -> None:
    _refused(env, [command, _citation(env), *extra], expected)
