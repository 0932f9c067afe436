"""The CLI against a live server through the SDK (no --local), with and without a key."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from powercontext.cli import app
from tests.http.conftest import KEY_A, Served
from tests.unit.test_cli_memory import check_idempotent_writes

runner = CliRunner()


def test_cli_talks_to_a_server(open_server: Served, fresh_scope: str) -> None:
    env = {"POWERCONTEXT_CLIENT_SERVER_URL": open_server.url}
    written = runner.invoke(
        app, ["memory", "remember", "Remote CLI fact", "--scope", fresh_scope, "--json"], env=env
    )
    assert written.exit_code == 0, written.output
    page = runner.invoke(
        app, ["memory", "search", "remote", "--scope", fresh_scope, "--json"], env=env
    )
    hits = json.loads(page.stdout)["hits"]
    assert [h["text"] for h in hits] == ["Remote CLI fact"]
    shown = runner.invoke(
        app,
        ["memory", "get", json.dumps(hits[0]["citation"]), "--scope", fresh_scope],
        env=env,
    )
    assert shown.exit_code == 0 and "Remote CLI fact" in shown.stdout
    entry_id = hits[0]["citation"]["entry_id"]
    by_id = runner.invoke(
        app,
        ["memory", "get", entry_id, "--scope", fresh_scope, "--revision", "1", "--json"],
        env=env,
    )
    assert by_id.exit_code == 0, by_id.output
    assert json.loads(by_id.stdout)["text"] == "Remote CLI fact"
    history = runner.invoke(
        app, ["memory", "history", entry_id, "--scope", fresh_scope, "--json"], env=env
    )
    assert [c["op"] for c in json.loads(history.stdout)["changes"]] == ["add"]
    as_of = runner.invoke(
        app,
        ["memory", "search", "remote", "--scope", fresh_scope, "--revision", "1", "--json"],
        env=env,
    )
    assert [h["text"] for h in json.loads(as_of.stdout)["hits"]] == ["Remote CLI fact"]
    missing = runner.invoke(
        app, ["memory", "get", "no-such-entry", "--scope", fresh_scope], env=env
    )
    assert missing.exit_code != 0 and "not_found" in missing.output


def test_cli_search_json_is_the_api_json(open_server: Served, fresh_scope: str) -> None:
    """docs/http.md: `--json` prints the API's JSON; the hits too, field for field."""
    env = {"POWERCONTEXT_CLIENT_SERVER_URL": open_server.url}
    written = runner.invoke(
        app,
        ["memory", "remember", "Threaded remote fact", "--scope", fresh_scope, "--thread", "t-1",
         "--occurred-at", "2021-05-01T10:00:00+02:00", "--json"],
        env=env,
    )  # fmt: skip
    assert written.exit_code == 0, written.output
    query = {"query": "remote fact", "mode": "fts", "revision": 1}
    shown = runner.invoke(
        app,
        ["memory", "search", query["query"], "--scope", fresh_scope, "--mode", "fts",
         "--revision", "1", "--json"],
        env=env,
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    with open_server.client() as http:
        api = http.post("/v1/memory/search", json={"scope_id": fresh_scope, **query}).json()
    cli = json.loads(shown.stdout)
    assert cli["hits"] and cli == api
    assert {"thread", "occurred_at", "explain"} <= set(cli["hits"][0])


def test_cli_writes_take_an_idempotency_key(open_server: Served, fresh_scope: str) -> None:
    """--idempotency-key reaches the server: a retry is answered with the original result."""
    env = {"POWERCONTEXT_CLIENT_SERVER_URL": open_server.url}
    check_idempotent_writes(
        lambda args: runner.invoke(app, ["memory", *args], env=env), fresh_scope
    )


def test_cli_reports_auth_errors(auth_server: Served) -> None:
    args = ["memory", "list", "--scope", "scope-a", "--server-url", auth_server.url]
    anonymous = runner.invoke(app, args)
    assert anonymous.exit_code == 1 and "unauthorized" in anonymous.stderr
    keyed = runner.invoke(app, [*args, "--json"], env={"POWERCONTEXT_CLIENT_API_KEY": KEY_A})
    assert keyed.exit_code == 0, keyed.output
    other = runner.invoke(
        app,
        [
            "memory",
            "list",
            "--scope",
            "scope-b",
            "--server-url",
            auth_server.url,
            "--api-key",
            KEY_A,
        ],
    )
    assert other.exit_code == 1 and "forbidden" in other.stderr
