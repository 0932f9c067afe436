"""The CLI as a new user meets it: help text, text from stdin, bad input and addresses, a
closed pipe. Every failure is one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import inspect
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.main import get_command

from powercontext.cli import app, output
from powercontext.cli.errors import fail_on_errors
from powercontext.client import UnauthorizedError
from tests.unit.cli_local import local_env, run_json, runner


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return local_env(tmp_path)


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    found = [(" ".join(path) or "powercontext", command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


def test_every_command_has_a_one_line_summary() -> None:
    # A group's command list shows a command's first paragraph with its line breaks kept, so
    # a summary wrapped in the docstring came out broken mid-sentence in `memory --help`.
    for path, command in _commands(get_command(app)):
        summary = inspect.cleandoc(command.help or "").split("\n\n")[0]
        assert summary, f"{path} has no help"
        assert "\n" not in summary, f"{path}: the first paragraph of its help is not one line"


@pytest.mark.parametrize("command", ["remember", "search", "get"])
def test_the_common_commands_show_examples(command: str) -> None:
    shown = runner.invoke(app, ["memory", command, "--help"], env={"COLUMNS": "80"})
    assert shown.exit_code == 0
    assert "Examples:" in shown.stdout
    assert f"powercontext memory {command} " in shown.stdout


def test_remember_and_revise_read_the_text_from_stdin(env: dict[str, str]) -> None:
    piped = "Ana's notes: ünïcode, 日本語 and an emoji 🎉\nsecond line\n"
    result = runner.invoke(
        app, ["memory", "remember", "-", "--scope", "p", "--local", "--json"], input=piped, env=env
    )
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["entries"][0]
    assert entry["text"] == piped.rstrip("\n")  # the pipe's final newline is not text

    citation = "{}:{}:{}".format(
        entry["citation"]["memory_ref"]["revision"], entry["entry_id"], entry["entry_version_id"]
    )
    revised = runner.invoke(
        app,
        ["memory", "revise", citation, "-", "--scope", "p", "--local", "--json"],
        input="revised from a pipe\r\n",
        env=env,
    )
    assert revised.exit_code == 0, revised.output
    assert json.loads(revised.stdout)["entries"][0]["text"] == "revised from a pipe"

    empty = runner.invoke(app, ["memory", "remember", "-", "--scope", "p", "--local"], input="\n")
    assert empty.exit_code == 1 and "must not be blank" in empty.stderr


@pytest.mark.parametrize("url", ["http://[::1", "localhost:8000"])
def test_a_malformed_server_url_is_a_configuration_error(url: str) -> None:
    result = runner.invoke(app, ["memory", "head", "--scope", "p", "--server-url", url])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error configuration_error: invalid server URL")
    assert len(result.stderr.strip().splitlines()) == 1 and result.exception is not None
    assert isinstance(result.exception, SystemExit)  # not an httpx error, no traceback


def test_input_that_is_not_utf8_is_refused_in_one_line(env: dict[str, str], tmp_path: Path) -> None:
    queries = tmp_path / "queries.txt"
    queries.write_bytes(b"\xff\xfe not text\n")
    batch = runner.invoke(
        app, ["memory", "search-batch", str(queries), "--scope", "p", "--local"], env=env
    )
    assert batch.exit_code == 1 and isinstance(batch.exception, SystemExit)
    assert "not UTF-8" in batch.stderr

    imported = runner.invoke(
        app, ["memory", "import", str(queries), "--scope", "p", "--local", "--json"], env=env
    )
    assert imported.exit_code == 1 and isinstance(imported.exception, SystemExit)
    assert "not UTF-8" in imported.stderr


def test_list_refuses_a_revision_below_one(env: dict[str, str]) -> None:
    run_json(env, "memory", "remember", "x", "--scope", "p")
    result = runner.invoke(
        app, ["memory", "list", "--scope", "p", "--revision", "-1", "--local"], env=env
    )
    # A usage error (2) naming the option, as for search and get, not "no revision -1".
    assert result.exit_code == 2 and "--revision" in result.output


def test_an_unauthorized_answer_says_how_to_pass_a_key(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exited, fail_on_errors():
        raise UnauthorizedError("missing bearer API key", status_code=401, code="unauthorized")
    assert exited.value.exit_code == 1
    line = capsys.readouterr().err
    assert "missing bearer API key" in line
    assert "--api-key" in line and "POWERCONTEXT_CLIENT_API_KEY" in line


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_json_to_a_closed_pipe_exits_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    # One large write (`list --json`) can meet the closed end too.
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    with pytest.raises(typer.Exit) as exited:
        output.print_json({"entries": []})
    assert exited.value.exit_code == 1


def test_db_upgrade_reports_a_bad_database_url_in_one_line() -> None:
    result = runner.invoke(
        app, ["db", "upgrade"], env={"POWERCONTEXT_SERVER_DATABASE_URL": "mysql://x"}
    )
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("error configuration_error:")
    assert "POWERCONTEXT_SERVER_DATABASE_URL" in result.stderr
