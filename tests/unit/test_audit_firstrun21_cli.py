"""First-run audit of issue 21: what the CLI prints where a new user or a script reads it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from powercontext.cli import app
from tests.unit.cli_local import local_env, runner


def _cli(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The real command in a process: a test runner's own prompt handling would hide what
    reaches stdout. It runs in the database's folder, so no `.env` of the checkout applies."""
    folder = Path(env["POWERCONTEXT_SERVER_DATABASE_URL"].removeprefix("sqlite:///")).parent
    return subprocess.run(
        [sys.executable, "-m", "powercontext.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, **env},
        cwd=folder,
        timeout=120,
        check=False,
    )


def test_the_erasure_question_leaves_stdout_to_the_answer(tmp_path: Path) -> None:
    env = local_env(tmp_path)
    written = _cli(env, "memory", "remember", "the gate code is 4411", "-s", "p", "--local")
    assert written.returncode == 0, written.stderr
    forget = ("memory", "forget-scope", "-s", "p", "--local", "--json")

    declined = _cli(env, *forget, stdin="n\n")
    assert declined.returncode == 1
    assert declined.stdout == ""  # not even the prompt's trailing space
    assert "for good? [y/N]: \n" in declined.stderr  # the error starts on a line of its own
    assert "error aborted: nothing was erased" in declined.stderr

    confirmed = _cli(env, *forget, stdin="y\n")
    assert confirmed.returncode == 0, confirmed.stderr
    assert confirmed.stdout.startswith("{")
    assert json.loads(confirmed.stdout)["erased_versions"] == 1


def test_get_at_a_revision_says_that_its_active_flag_is_the_heads(tmp_path: Path) -> None:
    env = local_env(tmp_path)
    written = _cli(
        env, "memory", "remember", "We deploy on Fridays.", "-s", "p", "--local", "--json"
    )
    first = json.loads(written.stdout)["entries"][0]
    token = f"1:{first['entry_id']}:{first['entry_version_id']}"
    revised = _cli(env, "memory", "revise", token, "We deploy on Mondays.", "-s", "p", "--local")
    assert revised.returncode == 0, revised.stderr

    # Revision 1's active version, which the head has replaced.
    shown = _cli(env, "memory", "get", first["entry_id"], "-s", "p", "--revision", "1", "--local")
    assert shown.returncode == 0, shown.stderr
    assert "We deploy on Fridays." in shown.stdout
    assert re.search(r"^ *active at head +false *$", shown.stdout, re.MULTILINE), shown.stdout


@pytest.mark.parametrize("command", ["search", "list", "import", "search-batch", "changes"])
def test_help_at_80_columns_cuts_no_word_short(command: str) -> None:
    """These commands' help columns are narrowest: the variable names were cut to
    `POWERCONTEXT_CLIENT_SE…`, unreadable."""
    shown = runner.invoke(app, ["memory", command, "--help"], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    assert "…" not in shown.stdout
    flat = "".join(line.strip(" │") for line in shown.stdout.splitlines())
    assert "POWERCONTEXT_CLIENT_SERVER_URL" in flat
    assert "POWERCONTEXT_CLIENT_API_KEY" in flat
