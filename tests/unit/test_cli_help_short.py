"""`-h` is `--help` on every command and group, as in `llm` and `sqlite-utils`. The tree is
walked from the app, so a command added later is covered without touching this test."""

from __future__ import annotations

import re
from typing import Any

import pytest
from typer.main import get_command

from powercontext.cli import app
from tests.unit.cli_local import runner


def _paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        found += _paths(sub, (*path, name))
    return found


PATHS = _paths(get_command(app))


def test_the_walk_reaches_the_nested_commands() -> None:
    # A walk that found only the root would make the test below pass for nothing.
    for path in [(), ("db",), ("server", "run"), ("memory", "search"), ("bench", "locomo")]:
        assert path in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "powercontext")
def test_dash_h_prints_the_help_as_dash_dash_help_does(path: tuple[str, ...]) -> None:
    env = {"COLUMNS": "100"}
    long = runner.invoke(app, [*path, "--help"], env=env)
    short = runner.invoke(app, [*path, "-h"], env=env)
    assert long.exit_code == 0, long.output
    assert short.exit_code == 0, short.output
    assert short.stdout == long.stdout
    assert "Usage:" in short.stdout
    assert re.search(r"(?<!-)-h\b", short.stdout), "the help does not list -h"
