"""Audit 16 of the CLI: what `memory export -o` leaves behind when it fails, scope ids and paths
that look like rich markup, and `--filter` errors that name the field."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from powercontext.cli import app
from tests.unit.cli_local import local_env, runner


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return local_env(tmp_path)


def _ok(env: dict[str, str], *args: str) -> str:
    result = runner.invoke(app, [*args], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_failed_export_leaves_an_existing_output_file_as_it_was(
    env: dict[str, str], tmp_path: Path
) -> None:
    backup = tmp_path / "backup.jsonl"
    backup.write_text("the last good export\n", encoding="utf-8")
    # A mistyped scope: the export fails before its first line.
    failed = runner.invoke(
        app, ["memory", "export", "-s", "typo", "-o", str(backup), "--local"], env=env
    )
    assert failed.exit_code == 1 and "not_found" in failed.stderr
    assert backup.read_text(encoding="utf-8") == "the last good export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.jsonl", "cli.db"], (
        "no partial file is left beside it"
    )


def test_a_successful_export_replaces_the_file_and_keeps_its_mode(
    env: dict[str, str], tmp_path: Path
) -> None:
    _ok(env, "memory", "remember", "We deploy on Fridays.", "-s", "p", "--local")
    out = tmp_path / "p.jsonl"
    out.write_text("old\n", encoding="utf-8")
    out.chmod(0o640)
    _ok(env, "memory", "export", "-s", "p", "-o", str(out), "--local")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["entry_count"] == 1 and len(lines) == 2
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    fresh = tmp_path / "fresh.jsonl"
    _ok(env, "memory", "export", "-s", "p", "-o", str(fresh), "--local")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask, "a new file: as open() makes it"


def test_export_through_a_symlink_writes_the_file_it_points_to(
    env: dict[str, str], tmp_path: Path
) -> None:
    _ok(env, "memory", "remember", "x", "-s", "p", "--local")
    real = tmp_path / "real.jsonl"
    real.write_text("", encoding="utf-8")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    _ok(env, "memory", "export", "-s", "p", "-o", str(link), "--local")
    assert link.is_symlink() and real.read_text(encoding="utf-8").count("\n") == 2


SCOPE = "team[/]a"  # rich reads `[/]` as a closing tag: printed as markup, it ended the command


def test_scopes_prints_a_scope_id_that_looks_like_markup(env: dict[str, str]) -> None:
    _ok(env, "memory", "remember", "markup", "-s", SCOPE, "--local")
    _ok(env, "memory", "remember", "bold", "-s", "[bold]b", "--local")
    listed = _ok(env, "memory", "scopes", "--local")
    assert SCOPE in listed and "[bold]b" in listed


def test_export_and_import_print_scope_ids_and_paths_as_they_are(
    env: dict[str, str], tmp_path: Path
) -> None:
    _ok(env, "memory", "remember", "markup", "-s", SCOPE, "--local")
    out = tmp_path / "[red]x.jsonl"
    exported = runner.invoke(
        app, ["memory", "export", "-s", SCOPE, "-o", str(out), "--local"], env=env
    )
    assert exported.exit_code == 0, exported.output
    assert f"export {SCOPE}" in exported.stderr, "the bar's label"
    assert f"exported 1 entry of {SCOPE} to {out}" in exported.stderr
    imported = runner.invoke(
        app, ["memory", "import", str(out), "-s", "[/]copy", "--local"], env=env
    )
    assert imported.exit_code == 0, imported.output
    assert "import [/]copy" in imported.stderr


def test_reindex_prints_a_scope_id_that_looks_like_markup(env: dict[str, str]) -> None:
    _ok(env, "memory", "remember", "markup", "-s", SCOPE, "--local")
    reindexed = runner.invoke(app, ["reindex", "--rebuild", "--scope", SCOPE], env=env)
    assert reindexed.exit_code == 0, reindexed.output
    assert f"re-indexed 1 entry in scope {SCOPE}" in reindexed.stdout
    assert SCOPE in reindexed.stderr, "the bar's label"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"kinds": "fact"}', "--filter: kinds: Input should be a valid array"),
        ('{"kind": ["fact"]}', "--filter: kind: Extra inputs are not permitted"),
        ('{"metadata": {"p": {"bogus": 1}}}', "--filter: metadata.p.bogus: Extra inputs"),
        ("nope", "--filter: Invalid JSON"),
    ],
)
def test_a_filter_error_names_the_field(env: dict[str, str], value: str, expected: str) -> None:
    result = runner.invoke(
        app, ["memory", "search", "x", "-s", "p", "--filter", value, "--local"], env=env
    )
    assert result.exit_code == 1 and result.stdout == ""
    assert expected in result.stderr, result.stderr
