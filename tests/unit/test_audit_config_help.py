"""`--help` of every command: it runs, it names each option's environment variable, and every
variable a help text names is one the program reads."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from powercontext.cli import app
from powercontext.client.settings import ClientSettings
from powercontext.config.settings import setting_names

runner = CliRunner()
READ = {
    "POWERCONTEXT_HOME",
    "POWERCONTEXT_MCP_API_KEY",
    *setting_names(),
    *(f"POWERCONTEXT_CLIENT_{name.upper()}" for name in ClientSettings.model_fields),
}


def _commands(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, [*path, name])


COMMANDS = list(_commands(get_command(app), []))


def test_every_command_is_found() -> None:
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "server run", "memory search", "mcp", "config show", "db upgrade"} <= paths
    assert len(paths) >= 25


@pytest.mark.parametrize(
    ("path", "command"), COMMANDS, ids=[" ".join(p) or "root" for p, _ in COMMANDS]
)
def test_help_runs_and_names_real_variables(path: list[str], command: Any) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    shown = result.stdout
    for param in command.params:
        envvar = getattr(param, "envvar", None)
        if isinstance(envvar, str):
            assert envvar in READ, envvar
            assert f"[env var: {envvar}]" in shown, (param.name, shown)
    # A prefix (`POWERCONTEXT_SERVER_*`) is a family of variables, not a name.
    for name in re.findall(r"POWERCONTEXT_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_]*\*)", shown):
        assert name in READ, f"{' '.join(path)} --help names {name}, which is read nowhere"
