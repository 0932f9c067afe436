"""Failures as a black-box user meets them: a bad option value is a usage error (exit 2), a
store that cannot be opened names the setting to fix, nothing on stderr but the one error
line, and Ctrl-C stops a command that waits on stdin at the first press."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from powercontext.cli import app
from tests.unit.cli_local import local_env, run_json, runner

URL = "POWERCONTEXT_SERVER_DATABASE_URL"
CLI = [sys.executable, "-m", "powercontext.cli"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return local_env(tmp_path)


def _one_error_line(stderr: str, code: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"error {code}: "), stderr
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "search", "x", "-s", "p", "--mode", "semantic"],
        ["memory", "search-batch", "-", "-s", "p", "--mode", "semantic"],
        ["memory", "import", "-", "-s", "p", "--on-existing", "merge"],
    ],
)
def test_a_bad_choice_is_a_usage_error(env: dict[str, str], args: list[str]) -> None:
    result = runner.invoke(app, [*args, "--local"], input="q\n", env=env)
    # As for --limit 0 or --revision -1: exit 2, the option named, before any work.
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--" in result.stderr


def test_db_upgrade_without_the_postgres_extra_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "powercontext.storage.postgres", None)
    result = runner.invoke(app, ["db", "upgrade"], env={URL: "postgresql://u@127.0.0.1:1/db"})
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    line = _one_error_line(result.stderr, "configuration_error")
    assert URL in line and "postgres extra" in line


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "list", "-s", "p", "--local"],
        ["memory", "scopes", "--local"],
        ["reindex"],
        ["reindex", "--rebuild"],
        ["db", "upgrade"],
    ],
)
def test_a_directory_as_the_database_names_the_setting(
    env: dict[str, str], tmp_path: Path, command: list[str]
) -> None:
    folder = tmp_path / "a-directory"
    folder.mkdir()
    result = runner.invoke(app, command, env=env | {URL: f"sqlite:///{folder}"})
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    line = _one_error_line(result.stderr, "storage_unavailable")
    assert str(folder) in line and f"{URL} names this database" in line


def test_an_unusable_home_names_the_home_variable(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    default = {k: v for k, v in env.items() if k != URL} | {"POWERCONTEXT_HOME": str(home)}
    result = runner.invoke(app, ["memory", "list", "-s", "p", "--local"], env=default)
    assert result.exit_code == 1
    line = _one_error_line(result.stderr, "storage_unavailable")
    assert "POWERCONTEXT_HOME" in line and URL in line


def test_reindex_writes_no_empty_line_to_stderr(env: dict[str, str]) -> None:
    # An empty store: the progress bar, started before any scope, drew an empty line.
    for flags in ([], ["--rebuild"]):
        result = runner.invoke(app, ["reindex", *flags], env=env)
        assert result.exit_code == 0, result.output
        assert result.stderr == ""
        assert result.stdout.endswith("0 entries in 0 scopes\n")


def test_reindex_rebuild_keeps_the_revision_and_reports_per_scope(env: dict[str, str]) -> None:
    for scope in ("a", "b"):
        run_json(env, "memory", "remember", f"{scope} fact", "--scope", scope)
    template = {"POWERCONTEXT_SERVER_RUNTIME_INDEX_TEMPLATE": "{text} {kind}"}
    result = runner.invoke(app, ["reindex", "--rebuild"], env=env | template)
    assert result.exit_code == 0, result.output
    assert result.stdout == "re-indexed 2 entries in 2 scopes\n"
    assert [line.split()[0] for line in result.stderr.splitlines()] == ["a", "b"]
    for scope in ("a", "b"):
        head = run_json(env, "memory", "head", "--scope", scope)
        assert head["memory_ref"]["revision"] == 1


def test_ctrl_c_stops_an_import_waiting_on_stdin(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncio's SIGINT handler only cancels the task at its next await; an import blocked in
    a synchronous read of stdin inside the loop went on waiting for input."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    read_end, write_end = os.pipe()
    # A pipe nobody writes to, as a terminal where nobody types (CliRunner takes bytes only).
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(os.fdopen(read_end, "rb")))
    ended = threading.Event()

    def end_input() -> None:  # without the fix the read never ends: make the test fail, not hang
        os.close(write_end)
        ended.set()

    # Import what the command loads first: in a fresh checkout, compiling those modules took
    # longer than the signal's delay, and a SIGINT that lands before the read is not this test.
    import powercontext.cli.transfer_commands
    import powercontext.runtime
    import powercontext.storage.sqlite  # noqa: F401

    # Python's own handler, whatever an earlier test's event loop left installed.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupt = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))
    give_up = threading.Timer(15.0, end_input)
    interrupt.start()
    give_up.start()
    started = time.monotonic()
    try:
        with pytest.raises(SystemExit) as exited:
            app(["memory", "import", "-", "-s", "p", "--local"], prog_name="powercontext")
    finally:
        for timer in (interrupt, give_up):
            timer.cancel()
            timer.join()
        if not ended.is_set():
            os.close(write_end)
        sys.stdin.close()
        signal.signal(signal.SIGINT, previous)
    assert exited.value.code == 130
    assert time.monotonic() - started < 10.0  # the signal's 2 s, not the 15 s of giving up


@pytest.mark.parametrize("scope_wide", [False, True])
def test_the_erasure_question_keeps_json_stdout_clean(
    env: dict[str, str], scope_wide: bool
) -> None:
    written = run_json(env, "memory", "remember", "the door code is 4417", "--scope", "p")
    entry_id = written["entries"][0]["entry_id"]
    command = ["memory", "forget-scope"] if scope_wide else ["memory", "forget", entry_id]
    # A real pipe: CliRunner echoes the answer it feeds into stdout, as a terminal would.
    result = subprocess.run(
        [*CLI, *command, "-s", "p", "--local", "--json"],
        input="y\n",
        capture_output=True,
        text=True,
        env=os.environ | env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["entry_ids"] == [entry_id]
    assert "for good? [y/N]" in result.stderr


def test_text_from_stdin_is_utf8_whatever_the_locale(env: dict[str, str]) -> None:
    # PYTHONIOENCODING stands for a latin-1 locale: stdin decoded `café` as `cafÃ©`.
    latin1 = os.environ | env | {"PYTHONIOENCODING": "latin-1"}
    remembered = subprocess.run(
        [*CLI, "memory", "remember", "-", "-s", "p", "--local", "--json"],
        input="café ☕\r\n".encode(),
        capture_output=True,
        env=latin1,
        timeout=60,
        check=False,
    )
    assert remembered.returncode == 0, remembered.stderr
    assert json.loads(remembered.stdout)["entries"][0]["text"] == "café ☕"

    not_utf8 = runner.invoke(
        app, ["memory", "search-batch", "-", "-s", "p", "--local"], input=b"caf\xe9\n", env=env
    )
    assert not_utf8.exit_code == 1
    assert "not UTF-8" in _one_error_line(not_utf8.stderr, "validation_error")


@pytest.mark.parametrize("given", [b"\xff\xfe not text\n", b'{"not": "a header"}\n'])
def test_an_import_refused_at_its_first_line_prints_only_the_error(
    env: dict[str, str], given: bytes
) -> None:
    # The bar was drawn as it opened, so its empty `0/?` line followed the error.
    result = runner.invoke(
        app, ["memory", "import", "-", "-s", "p", "--local"], input=given, env=env
    )
    assert result.exit_code == 1
    _one_error_line(result.stderr, "validation_error")
