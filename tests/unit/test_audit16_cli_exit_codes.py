"""docs/cli.md's exit-code table: each row's example, run as written (on the embedded store),
exits with the row's code, and an error is one line on stderr with nothing on stdout."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from powercontext.cli import app
from tests.unit.cli_local import local_env, runner

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_ROW = re.compile(r"^\| (\d+) \|.*\| `([^`]+)` \|$", re.MULTILINE)


def _rows() -> list[tuple[int, str]]:
    return [(int(code), example) for code, example in _ROW.findall(DOC.read_text("utf-8"))]


def test_the_table_has_an_example_for_each_failure_code() -> None:
    assert {code for code, _ in _rows()} == {0, 1, 2}


@pytest.mark.parametrize(("code", "example"), _rows())
def test_each_example_exits_with_its_documented_code(
    tmp_path: Path, code: int, example: str
) -> None:
    result = runner.invoke(app, shlex.split(example), env=local_env(tmp_path))
    assert result.exit_code == code, result.output
    if code:
        assert result.stdout == "" and "Traceback" not in result.stderr
    if code == 1:
        assert re.fullmatch(r"error [a-z_]+: [^\n]+\n", result.stderr), result.stderr


@pytest.mark.parametrize("group", [[], ["memory"], ["server"], ["config"], ["db"]])
def test_a_group_without_a_command_prints_its_help_and_exits_2(group: list[str]) -> None:
    result = runner.invoke(app, group)
    assert result.exit_code == 2 and "Usage:" in result.output
