"""The CLI as a new user meets it at 80 columns: citations copy whole, flags show no type,
`config show` fits and lists every setting, and the revision commands work end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from powercontext.cli import app
from powercontext.config import ServerSettings
from tests.unit.cli_local import local_env

runner = CliRunner()
TOKEN = re.compile(r"\b\d+:[0-9a-f]{16,}:[0-9a-f]{16,}\b")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"COLUMNS": "80", **local_env(tmp_path)}


def _ok(env: dict[str, str], *args: str) -> str:
    result = runner.invoke(app, [*args, "--local"], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(env: dict[str, str], *args: str) -> Any:
    return json.loads(_ok(env, *args, "--json"))


def _token(citation: dict[str, Any]) -> str:
    revision = citation["memory_ref"]["revision"]
    return f"{revision}:{citation['entry_id']}:{citation['entry_version_id']}"


def test_citations_fit_on_one_line_at_80_columns(env: dict[str, str]) -> None:
    long_text = "A long entry that has to wrap, " * 6
    written = _json(env, "memory", "remember", long_text, "--scope", "p")
    expected = _token(written["entries"][0]["citation"])
    for args in (
        ("memory", "remember", "entry that wraps " * 8, "--scope", "p"),
        ("memory", "search", "entry", "--scope", "p"),
        ("memory", "list", "--scope", "p"),
        ("memory", "get", expected, "--scope", "p"),
    ):
        shown = _ok(env, *args)
        lines = shown.splitlines()
        assert all(len(line.rstrip()) <= 80 for line in lines), shown
        tokens = [m.group(0) for line in lines for m in TOKEN.finditer(line)]
        assert tokens, shown
        for token in tokens:  # whole on its line: pasting it back resolves the entry
            entry = _json(env, "memory", "get", token, "--scope", "p")
            assert entry["entry_version_id"] == token.rsplit(":", 1)[1]
    assert expected.split(":", 1)[1] in _ok(env, "memory", "list", "--scope", "p")


def test_flags_show_no_bool_type_in_help(env: dict[str, str]) -> None:
    for command in (["memory", "search"], ["memory", "revise"], ["config", "show"]):
        shown = runner.invoke(app, [*command, "--help"], env=env)
        assert shown.exit_code == 0
        assert "--json" in shown.stdout and "<bool>" not in shown.stdout
    assert "<str>" in runner.invoke(app, ["memory", "search", "--help"], env=env).stdout


def test_config_show_fits_80_columns_and_lists_every_setting(env: dict[str, str]) -> None:
    as_json = runner.invoke(app, ["config", "show", "--json"], env=env)
    variables = set(json.loads(as_json.stdout))
    settings = ServerSettings()
    for group in ("runtime", "inference", "database", "http", "ui"):
        for field in type(getattr(settings, group)).model_fields:
            assert f"POWERCONTEXT_SERVER_{group}_{field}".upper() in variables
    shown = runner.invoke(app, ["config", "show"], env=env).stdout
    listed: set[str] = set()
    prefix = ""
    for line in shown.splitlines():
        assert len(line.rstrip()) <= 80, line
        if line.endswith("*"):
            prefix = line[:-1]
        elif line.startswith("  ") and not line.startswith("   "):  # not a folded value
            listed.add(prefix + line.split()[0])
    assert listed == variables


def test_revise_reactivate_changes_head_and_history(env: dict[str, str]) -> None:
    assert _json(env, "memory", "head", "--scope", "p") == {"memory_ref": None}
    first = _json(env, "memory", "remember", "We deploy on Fridays.", "--scope", "p")
    citation = _token(first["entries"][0]["citation"])
    revised = _json(
        env, "memory", "revise", citation, "We deploy on Tuesdays.", "--scope", "p",
        "--reason", "policy change",
    )  # fmt: skip
    new = _token(revised["entries"][0]["citation"])
    _json(env, "memory", "retire", new, "--scope", "p")
    current = new.replace("2:", "3:", 1)
    back = _json(env, "memory", "reactivate", current, "--scope", "p", "--reason", "undo")
    assert back["memory_ref"]["revision"] == 4
    assert _json(env, "memory", "head", "--scope", "p")["memory_ref"]["revision"] == 4
    assert "p@4" in _ok(env, "memory", "head", "--scope", "p")

    log = _json(env, "memory", "changes", "--scope", "p", "--since", "1")
    assert [c["op"] for c in log["changes"]] == ["revise", "retire", "reactivate"]
    assert log["changes"][0]["reason"] == "policy change"

    entry_id = first["entries"][0]["entry_id"]
    history = _json(env, "memory", "history", entry_id, "--scope", "p")
    assert [c["op"] for c in history["changes"]] == ["reactivate", "retire", "revise", "add"]
    # reactivate writes a new version with the retired one's content
    texts = [v["entry"]["text"] for v in history["versions"]]
    assert texts == ["We deploy on Tuesdays.", "We deploy on Tuesdays.", "We deploy on Fridays."]
    assert [v["written_by"]["op"] for v in history["versions"]] == ["reactivate", "revise", "add"]
    at_three = _json(env, "memory", "history", entry_id, "--scope", "p", "--revision", "3")
    assert [c["op"] for c in at_three["changes"]] == ["retire", "revise", "add"]
    assert at_three["active_version"] is None
    assert "no active version at revision 3" in _ok(
        env, "memory", "history", entry_id, "--scope", "p", "--revision", "3"
    )
    by_id = _json(env, "memory", "get", entry_id, "--scope", "p", "--revision", "1")
    assert (by_id["text"], by_id["citation"]["memory_ref"]["revision"]) == (
        "We deploy on Fridays.",
        1,
    )
    assert _json(env, "memory", "get", entry_id, "--scope", "p")["version"] == 3
    shown = _ok(env, "memory", "history", citation, "--scope", "p")  # a citation works too
    assert "3 versions" in shown and "+00:00" in shown  # timestamps carry their zone
    assert all(len(line.rstrip()) <= 80 for line in shown.splitlines()), shown
    changes_shown = _ok(env, "memory", "changes", "--scope", "p")
    assert all(len(line.rstrip()) <= 80 for line in changes_shown.splitlines()), changes_shown

    missing = runner.invoke(app, ["memory", "history", "nope", "--scope", "p", "--local"], env=env)
    assert missing.exit_code == 1 and "not_found" in missing.stderr


def test_changes_hints_more_only_when_changes_remain(env: dict[str, str]) -> None:
    for text in ("one", "two", "three", "four"):
        _json(env, "memory", "remember", text, "--scope", "p")
    whole = _ok(env, "memory", "changes", "--scope", "p", "--since", "0")
    assert "4 changes" in whole and "more:" not in whole
    first = _ok(env, "memory", "changes", "--scope", "p", "--limit", "3")
    assert first.rstrip().endswith("more: --since 3")
    last = _ok(env, "memory", "changes", "--scope", "p", "--since", "3")
    assert "1 change ·" in last and "more:" not in last
    assert "more:" not in _ok(env, "memory", "changes", "--scope", "empty")


def test_history_says_which_revision_a_version_is_not_active_at(env: dict[str, str]) -> None:
    first = _json(env, "memory", "remember", "We deploy on Fridays.", "--scope", "p")
    _json(env, "memory", "revise", _token(first["entries"][0]["citation"]), "Tuesdays.",
          "--scope", "p")  # fmt: skip
    _json(env, "memory", "remember", "unrelated", "--scope", "p")
    entry_id = first["entries"][0]["entry_id"]
    at_two = _ok(env, "memory", "history", entry_id, "--scope", "p", "--revision", "2")
    assert "v1 · fact" in at_two and "· not active at revision 2" in at_two
    assert "at head" not in at_two
    at_head = _ok(env, "memory", "history", entry_id, "--scope", "p")
    assert "· not active at head" in at_head and "at revision" not in at_head


def test_history_labels_the_version_active_at_the_revision_asked(env: dict[str, str]) -> None:
    """The label follows the history's own active version, not the head-relative flag."""
    first = _json(env, "memory", "remember", "We deploy on Fridays.", "--scope", "p")
    _json(env, "memory", "revise", _token(first["entries"][0]["citation"]), "Tuesdays.",
          "--scope", "p")  # fmt: skip
    entry_id = first["entries"][0]["entry_id"]

    def labels(*revision: str) -> dict[str, str]:
        shown = _ok(env, "memory", "history", entry_id, "--scope", "p", *revision)
        heads = [line.strip().split(" · ") for line in shown.splitlines()]
        return {parts[0]: parts[-1] for parts in heads if parts[0] in ("v1", "v2")}

    assert labels("--revision", "1") == {"v1": "active"}
    assert labels("--revision", "2") == {"v2": "active", "v1": "not active at revision 2"}
    assert labels() == {"v2": "active", "v1": "not active at head"}
