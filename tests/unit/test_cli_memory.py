"""`powercontext memory ...` on the embedded store (--local), through Typer's CliRunner."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import Result

from powercontext.cli import app
from powercontext.server.search_schemas import HitModel
from tests.unit.cli_local import local_env, run_json, runner


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return local_env(tmp_path)


def test_remember_search_get_list_retire(env: dict[str, str]) -> None:
    written = run_json(
        env,
        "memory",
        "remember",
        "Ana moved to Lisbon in 2021.",
        "--scope",
        "p",
        "--kind",
        "event",
        "--metadata",
        '{"source": "chat"}',
    )
    assert written["memory_ref"] == {"scope_id": "p", "revision": 1}
    run_json(env, "memory", "remember", "Ben likes sailing.", "--scope", "p")

    page = run_json(env, "memory", "search", "Lisbon", "--scope", "p", "--mode", "fts")
    assert page["mode"] == "fts" and len(page["hits"]) == 1
    hit = page["hits"][0]
    assert hit["text"] == "Ana moved to Lisbon in 2021." and hit["kind"] == "event"
    assert hit["metadata"] == {"source": "chat"}

    # A citation from --json output is accepted as is, and so is the compact token.
    entry = run_json(env, "memory", "get", json.dumps(hit["citation"]), "--scope", "p")
    assert entry["entry_version_id"] == hit["citation"]["entry_version_id"]
    token = "{}:{}:{}".format(
        hit["citation"]["memory_ref"]["revision"],
        hit["citation"]["entry_id"],
        hit["citation"]["entry_version_id"],
    )
    assert run_json(env, "memory", "get", token, "--scope", "p")["text"] == hit["text"]

    listed = run_json(env, "memory", "list", "--scope", "p")
    assert [e["text"] for e in listed["entries"]] == [
        "Ana moved to Lisbon in 2021.",
        "Ben likes sailing.",
    ]
    retired = run_json(env, "memory", "retire", token, "--scope", "p", "--reason", "moved again")
    assert retired["memory_ref"]["revision"] == 3
    assert run_json(env, "memory", "search", "Lisbon", "--scope", "p")["hits"] == []


def test_search_json_hits_carry_every_field_of_the_api_hit(env: dict[str, str]) -> None:
    run_json(
        env, "memory", "remember", "Ana moved to Lisbon.", "--scope", "p",
        "--thread", "chat-7", "--occurred-at", "2021-05-01T10:00:00Z",
    )  # fmt: skip
    for args in (("search", "Lisbon"), ("search-batch", "-")):
        result = runner.invoke(
            app,
            ["memory", *args, "--scope", "p", "--mode", "fts", "--local", "--json"],
            env=env,
            input="Lisbon\n",
        )
        assert result.exit_code == 0, result.output
        page = json.loads(result.stdout)
        hit = (page["pages"][0] if "pages" in page else page)["hits"][0]
        assert set(hit) == set(HitModel.model_fields)
        # The wire model renders it unchanged: same fields, same JSON form (datetimes too).
        assert HitModel.model_validate(hit).model_dump(mode="json") == hit
        assert (hit["thread"], hit["occurred_at"]) == ("chat-7", "2021-05-01T10:00:00Z")
        assert [(e["channel"], e["rank"]) for e in hit["explain"]] == [("fts", 1)]


def test_human_readable_tables(env: dict[str, str]) -> None:
    runner.invoke(
        app,
        ["memory", "remember", "The [bold]deploy[/bold] is on Friday", "--scope", "t", "--local"],
        env=env,
    )
    result = runner.invoke(app, ["memory", "search", "deploy", "--scope", "t", "--local"], env=env)
    assert result.exit_code == 0, result.output
    assert "1 hit ·" in result.stdout and "[bold]deploy[/bold]" in result.stdout
    listed = runner.invoke(app, ["memory", "list", "--scope", "t", "--local"], env=env)
    assert "1 entry ·" in listed.stdout and "t@1" in listed.stdout


def test_errors_are_one_line_and_exit_non_zero(env: dict[str, str]) -> None:
    blank = runner.invoke(app, ["memory", "remember", "   ", "--scope", "p", "--local"], env=env)
    assert blank.exit_code == 1 and "validation_error" in blank.stderr
    assert "Traceback" not in blank.output

    missing = runner.invoke(
        app, ["memory", "get", "1:nope:nope", "--scope", "p", "--local"], env=env
    )
    assert missing.exit_code == 1 and "not_found" in missing.stderr

    bad = runner.invoke(
        app, ["memory", "get", "not:a-citation", "--scope", "p", "--local"], env=env
    )
    assert bad.exit_code == 1 and "citation" in bad.stderr
    # Without a colon the argument is an entry id, looked up at the head.
    unknown = runner.invoke(
        app, ["memory", "get", "no-such-entry", "--scope", "p", "--local"], env=env
    )
    assert unknown.exit_code == 1 and "not_found" in unknown.stderr

    none_env = env | {"POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "none"}
    runner.invoke(app, ["memory", "remember", "x y", "--scope", "p", "--local"], env=none_env)
    vector = runner.invoke(
        app, ["memory", "search", "x", "--scope", "p", "--mode", "vector", "--local"], env=none_env
    )
    assert vector.exit_code == 1 and "capability_not_supported" in vector.stderr

    config = runner.invoke(
        app,
        ["memory", "list", "--scope", "p", "--local"],
        env=env | {"POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMIT": "500"},
    )
    assert config.exit_code == 2
    assert "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMIT" in config.stderr


def test_search_floors_drop_hits_below_them(env: dict[str, str]) -> None:
    run_json(env, "memory", "remember", "Lisbon Lisbon Lisbon trams", "--scope", "p")
    run_json(
        env, "memory", "remember", "Ana moved to Lisbon in 2021, among many other things.",
        "--scope", "p",
    )  # fmt: skip
    search = ("memory", "search", "Lisbon", "--scope", "p", "--mode", "fts")
    hits = run_json(env, *search)["hits"]
    bm25 = [hit["explain"][0]["score"] for hit in hits]
    assert len(bm25) == 2 and bm25[0] > bm25[1]
    between = str((bm25[0] + bm25[1]) / 2)
    kept = run_json(env, *search, "--min-score", between)["hits"]
    assert [hit["text"] for hit in kept] == ["Lisbon Lisbon Lisbon trams"]
    assert run_json(env, *search, "--min-score", "1000")["hits"] == []

    vector = ("memory", "search", "Lisbon", "--scope", "p", "--mode", "vector")
    assert run_json(env, *vector, "--min-similarity", "-1")["hits"]
    assert run_json(env, *vector, "--min-similarity", "1")["hits"] == []
    out_of_range = runner.invoke(app, [*vector, "--min-similarity", "2", "--local"], env=env)
    assert out_of_range.exit_code != 0


Invoke = Callable[[Sequence[str]], Result]
"""Run `powercontext memory ARGS...` against one store (a server, or --local)."""


def check_idempotent_writes(invoke: Invoke, scope: str) -> None:
    """Each CLI write with --idempotency-key: a retry with the same key and body prints the
    original result and writes nothing; the same key with another body is refused (409)."""

    def head() -> int:
        shown = invoke(["head", "--scope", scope, "--json"])
        assert shown.exit_code == 0, shown.output
        return int(json.loads(shown.stdout)["memory_ref"]["revision"])

    def twice(*args: str) -> str:
        """The write and its retry print the same, at the same head; the write's citation of
        the entry at the revision it made."""
        command = [*args, "--scope", scope]
        first = invoke([*command, "--json"])
        assert first.exit_code == 0, first.output
        at = head()
        again = invoke([*command, "--json"])
        assert again.exit_code == 0, again.output
        assert json.loads(again.stdout) == json.loads(first.stdout)
        assert head() == at
        plain = invoke(command)  # the human-readable answer names the same citations
        assert plain.exit_code == 0 and plain.stdout.startswith(f"revision {at} of")
        tokens = [
            "{}:{}:{}".format(
                e["citation"]["memory_ref"]["revision"], e["entry_id"], e["entry_version_id"]
            )
            for e in json.loads(first.stdout)["entries"]
        ]
        assert all(token in plain.stdout for token in tokens)
        assert head() == at
        return tokens[0] if tokens else f"{at}:{args[1].split(':', 1)[1]}"

    def conflicts(*args: str) -> None:
        at = head()
        refused = invoke([*args, "--scope", scope])
        assert refused.exit_code == 1, refused.output
        assert "error idempotency_conflict:" in refused.stderr, refused.output
        assert head() == at

    added = twice("remember", "We deploy on Fridays.", "--idempotency-key", "k-add")
    conflicts("remember", "We deploy on Mondays.", "--idempotency-key", "k-add")
    revised = twice("revise", added, "Tuesdays.", "--idempotency-key", "k-revise")
    conflicts("revise", added, "Wednesdays.", "--idempotency-key", "k-revise")
    retired = twice("retire", revised, "--reason", "stale", "--idempotency-key", "k-retire")
    conflicts("retire", revised, "--reason", "other", "--idempotency-key", "k-retire")
    twice("reactivate", retired, "--idempotency-key", "k-reactivate")
    conflicts("reactivate", retired, "--reason", "undo", "--idempotency-key", "k-reactivate")
    assert head() == 4
    # Without a key, the same write is a new one.
    assert invoke(["remember", "We deploy on Fridays.", "--scope", scope]).exit_code == 0
    assert head() == 5


def test_writes_take_an_idempotency_key(env: dict[str, str]) -> None:
    check_idempotent_writes(
        lambda args: runner.invoke(app, ["memory", *args, "--local"], env=env), "p"
    )
