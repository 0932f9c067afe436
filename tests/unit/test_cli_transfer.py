"""`powercontext memory export|import` on the embedded store (--local), through CliRunner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from powercontext.cli import app
from tests.unit.cli_local import local_env, runner


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return local_env(tmp_path)


def _run(env: dict[str, str], *args: str, stdin: str | None = None) -> Any:
    result = runner.invoke(app, ["memory", *args, "--local"], env=env, input=stdin)
    assert result.exit_code == 0, result.output
    return result


def _entries(env: dict[str, str], scope: str) -> list[tuple[Any, ...]]:
    page = json.loads(_run(env, "list", "--scope", scope, "--json").stdout)
    return [
        (e["entry_id"], e["kind"], e["text"], e["metadata"], e["thread"], e["occurred_at"])
        for e in page["entries"]
    ]


def _seed(env: dict[str, str]) -> None:
    for i in range(3):
        _run(
            env,
            "remember",
            f"line {i} of the design review",
            "--scope",
            "src",
            "--kind",
            "message",
            "--metadata",
            json.dumps({"n": i}),
            "--thread",
            "review",
            "--occurred-at",
            f"2024-02-0{i + 1}T09:00:00Z",
        )


def test_export_to_a_file_and_import_with_a_progress_bar(
    env: dict[str, str], tmp_path: Path
) -> None:
    _seed(env)
    dump = tmp_path / "src.jsonl"
    exported = _run(env, "export", "--scope", "src", "--output", str(dump))
    assert "exported 3 entries of src" in exported.stderr
    assert "3/3" in exported.stderr, "the progress bar reached the entry count"
    lines = dump.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["entry_count"] == 3 and len(lines) == 4

    imported = _run(env, "import", str(dump), "--scope", "dst")
    assert "3 added, 0 replaced, 0 skipped, in 1 revision (head 1)" in imported.stdout
    assert "import dst" in imported.stderr and "3/3" in imported.stderr
    assert _entries(env, "dst") == _entries(env, "src")

    refused = runner.invoke(
        app, ["memory", "import", str(dump), "--scope", "dst", "--local"], env=env
    )
    assert refused.exit_code != 0 and "revision_conflict" in refused.output
    skipped = _run(env, "import", str(dump), "--scope", "dst", "--on-existing", "skip", "--json")
    assert json.loads(skipped.stdout)["skipped"] == 3


def test_import_summary_wraps_only_between_phrases_at_80_columns(
    env: dict[str, str], tmp_path: Path
) -> None:
    _seed(env)
    dump = tmp_path / "src.jsonl"
    _run(env, "export", "--scope", "src", "--output", str(dump))
    # Printed as one rich line, these summaries break inside "(head 1)" or "in 1 revision"
    # (`team-alpha` with the old "revisions").
    for scope in ("team-alpha", "team-alpha-2", "a-scope-of-24-characters"):
        shown = _run(env | {"COLUMNS": "80"}, "import", str(dump), "--scope", scope).stdout
        assert all(len(line) <= 80 for line in shown.splitlines()), shown
        lines = [line.strip() for line in shown.splitlines()]
        summary = f"imported into {scope}: 3 added, 0 replaced, 0 skipped, in 1 revision (head 1)"
        assert " ".join(lines) == summary, shown
        for phrase in ("in 1 revision", "(head 1)"):
            assert any(phrase in line for line in lines), shown


def test_export_to_stdout_pipes_into_import_from_stdin(env: dict[str, str]) -> None:
    _seed(env)
    exported = _run(env, "export", "--scope", "src", "--json")
    assert exported.stderr == "", "--json draws no bar"
    assert json.loads(exported.stdout.splitlines()[0])["scope_id"] == "src"
    imported = _run(env, "import", "-", "--scope", "copy", "--json", stdin=exported.stdout)
    assert json.loads(imported.stdout)["added"] == 3
    assert _entries(env, "copy") == _entries(env, "src")


def test_bad_options_and_files_are_reported(env: dict[str, str], tmp_path: Path) -> None:
    missing = runner.invoke(
        app, ["memory", "import", str(tmp_path / "none.jsonl"), "-s", "x", "--local"], env=env
    )
    assert missing.exit_code != 0 and "cannot open" in missing.output
    policy = runner.invoke(
        app, ["memory", "import", "-", "-s", "x", "--on-existing", "merge", "--local"], env=env
    )
    assert policy.exit_code != 0 and "--on-existing" in policy.output
    unknown = runner.invoke(app, ["memory", "export", "-s", "never", "--local"], env=env)
    assert unknown.exit_code != 0 and "not_found" in unknown.output
