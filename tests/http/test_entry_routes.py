"""HTTP v1: an entry by id, its history, and idempotent writes, end to end over the wire."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from powercontext.cli import app
from powercontext.client import SyncPowerContextClient
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from tests.http.conftest import KEY_A, KEY_B, Served

runner = CliRunner()


def test_by_id_history_and_idempotent_writes(open_server: Served, fresh_scope: str) -> None:
    with open_server.client() as http:
        body = {
            "scope_id": fresh_scope,
            "entries": [{"text": "the kettle is green"}, {"text": "tea at five"}],
            "idempotency_key": "load-1",
        }
        first = http.post("/v1/memory/remember", json=body)
        assert first.status_code == 200
        again = http.post("/v1/memory/remember", json=body)
        assert again.status_code == 200 and again.json() == first.json()
        clash = http.post("/v1/memory/remember", json=body | {"entries": [{"text": "other"}]})
        assert clash.status_code == 409
        assert clash.json()["error"]["code"] == "idempotency_conflict"
        head = http.post("/v1/memory/head", json={"scope_id": fresh_scope}).json()
        assert head["memory_ref"]["revision"] == 1

        entry = first.json()["entries"][0]
        retire = {"scope_id": fresh_scope, "citation": entry["citation"], "idempotency_key": "r"}
        retired = http.post("/v1/memory/entries/retire", json=retire)
        assert retired.status_code == 200
        assert http.post("/v1/memory/entries/retire", json=retire).json() == retired.json()

        ask = {"scope_id": fresh_scope, "entry_id": entry["entry_id"]}
        gone = http.post("/v1/memory/entries/by-id", json=ask)
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
        then = http.post("/v1/memory/entries/by-id", json=ask | {"revision": 1})
        assert then.status_code == 200 and then.json()["text"] == "the kettle is green"

        history = http.post("/v1/memory/entries/history", json=ask).json()
        assert [c["op"] for c in history["changes"]] == ["retire", "add"]
        assert history["active_version"] is None and history["complete"] is True
        past = http.post("/v1/memory/entries/history", json=ask | {"revision": 1}).json()
        assert past["active_version"]["text"] == "the kettle is green"
        late = http.post("/v1/memory/entries/history", json=ask | {"revision": 9})
        assert late.status_code == 404
        bad = http.post("/v1/memory/entries/by-id", json=ask | {"revision": True})
        assert bad.status_code == 422

        search = {"scope_id": fresh_scope, "query": "kettle green", "mode": "fts"}
        assert http.post("/v1/memory/search", json=search).json()["hits"] == []
        as_of = http.post("/v1/memory/search", json=search | {"revision": 1}).json()
        assert [h["text"] for h in as_of["hits"]] == ["the kettle is green"]
        assert as_of["hits"][0]["citation"]["memory_ref"]["revision"] == 1
        (explained,) = as_of["hits"][0]["explain"]
        assert explained["channel"] == "fts" and explained["rank"] == 1
        floor = search | {"revision": 1, "min_score": explained["score"] + 1.0}
        assert http.post("/v1/memory/search", json=floor).json()["hits"] == []
        ahead = http.post("/v1/memory/search", json=search | {"revision": 3})
        assert ahead.status_code == 404


def test_scopes_lists_only_what_the_key_may_use(auth_server: Served) -> None:
    with SyncPowerContextClient(auth_server.url, api_key=KEY_A) as client:
        client.memory.for_scope("scope-a").remember(RememberMemoryRequest(text="listed"))
        listed = client.memory.scopes()
    assert [s.scope_id for s in listed] == ["scope-a"]
    assert listed[0].entry_count >= 1 and listed[0].memory_ref.revision >= 1
    with SyncPowerContextClient(auth_server.url, api_key=KEY_B) as other:
        assert "scope-a" not in [s.scope_id for s in other.memory.scopes()]
    with auth_server.client() as http:
        assert http.get("/v1/scopes").status_code == 401
    shown = runner.invoke(
        app,
        ["memory", "scopes", "--server-url", auth_server.url, "--api-key", KEY_A, "--json"],
    )
    assert shown.exit_code == 0, shown.output
    assert [s["scope_id"] for s in json.loads(shown.stdout)["scopes"]] == ["scope-a"]


def test_filters_over_http_sdk_cli(open_server: Served, fresh_scope: str) -> None:
    notes = [
        {"text": f"filtered kettle {i}", "kind": "rare" if i == 5 else "fact", "metadata": {"n": i}}
        for i in range(12)
    ]
    with open_server.client() as http:
        assert (
            http.post(
                "/v1/memory/remember", json={"scope_id": fresh_scope, "entries": notes}
            ).status_code
            == 200
        )
        wanted = {"metadata": {"n": {"gte": 9}}}
        body = {"scope_id": fresh_scope, "query": "kettle", "mode": "fts", "limit": 2}
        page = http.post("/v1/memory/search", json=body | {"filter": wanted}).json()
        assert sorted(h["metadata"]["n"] for h in page["hits"]) in ([9, 10], [9, 11], [10, 11])
        listed = http.post(
            "/v1/memory/entries/list", json={"scope_id": fresh_scope, "filter": wanted}
        ).json()
        assert [e["metadata"]["n"] for e in listed["entries"]] == [9, 10, 11]
        bad = http.post("/v1/memory/search", json=body | {"filter": {"metadata": {"n": {}}}})
        assert bad.status_code == 422
    with SyncPowerContextClient(open_server.url) as client:
        scoped = client.memory.for_scope(fresh_scope)
        rare = MemoryFilter(kinds=("rare",))
        assert [e.metadata["n"] for e in scoped.list(where=rare).entries] == [5]
        found = scoped.search(SearchMemoryRequest(query="kettle", mode="fts", filter=rare))
        assert [h.kind for h in found.hits] == ["rare"]
    shown = runner.invoke(
        app,
        [
            "memory",
            "search",
            "kettle",
            "--scope",
            fresh_scope,
            "--json",
            "--server-url",
            open_server.url,
            "--filter",
            '{"kinds": ["rare"]}',
        ],
    )
    assert shown.exit_code == 0, shown.output
    assert [h["kind"] for h in json.loads(shown.stdout)["hits"]] == ["rare"]
    bad_cli = runner.invoke(
        app,
        [
            "memory",
            "list",
            "--scope",
            fresh_scope,
            "--server-url",
            open_server.url,
            "--filter",
            "{not json",
        ],
    )
    assert bad_cli.exit_code != 0 and "--filter" in bad_cli.output
