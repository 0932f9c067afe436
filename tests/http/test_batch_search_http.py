"""Batch search end to end: HTTP v1, the SDK (async and sync), MCP and the CLI."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from powercontext.cli import app
from powercontext.client import PowerContextClient, SyncPowerContextClient
from powercontext.memory import MemoryValidationError, RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.models import MemoryRef
from powercontext.server.search_schemas import BatchSearchResponse
from tests.http.conftest import Served
from tests.http.test_mcp import _ok, mcp_client

runner = CliRunner()


# The searches use fts: the open server's scripted reranker reverses the coarse pool, so a
# stray vector candidate (hash-embedder bucket collision) would otherwise come first.
def _seed(served: Served, scope: str) -> list[str]:
    words = [f"{name}{uuid.uuid4().hex[:6]}" for name in ("otter", "heron", "lynx")]
    with served.client() as http:
        entries = [{"text": f"the {w} lives by the river"} for w in words]
        reply = http.post("/v1/memory/remember", json={"scope_id": scope, "entries": entries})
        assert reply.status_code == 200, reply.text
    return words


def test_http_answers_one_page_per_search_in_order(open_server: Served, fresh_scope: str) -> None:
    words = _seed(open_server, fresh_scope)
    searches = [{"query": w, "limit": 2, "mode": "fts"} for w in reversed(words)]
    with open_server.client() as http:
        reply = http.post(
            "/v1/memory/search/batch",
            json={"scope_id": fresh_scope, "searches": searches, "include_rerank": "redacted"},
        )
    assert reply.status_code == 200, reply.text
    body = BatchSearchResponse.model_validate(reply.json())
    assert body.memory_ref is not None and body.memory_ref.revision == 1
    assert [page.hits[0].text for page in body.pages] == [
        f"the {w} lives by the river" for w in reversed(words)
    ]
    assert all(page.memory_ref == body.memory_ref for page in body.pages)
    assert all(page.rerank_status == "applied" and page.rerank for page in body.pages)
    trace = body.pages[0].rerank
    assert (
        trace is not None and trace.candidate_policy_id == "powercontext.memory.candidates.fixed.v1"
    )
    assert trace.candidate_limit == 30 and trace.query_class is None


def test_http_refuses_a_batch_over_the_limit_naming_it(open_server: Served) -> None:
    searches = [{"query": f"q{i}"} for i in range(65)]
    with open_server.client() as http:
        too_many = http.post(
            "/v1/memory/search/batch", json={"scope_id": "x", "searches": searches}
        )
        empty = http.post("/v1/memory/search/batch", json={"scope_id": "x", "searches": []})
    assert too_many.status_code == 422
    assert "limit of 64" in too_many.text and "MAX_BATCH_QUERIES" in too_many.text
    assert empty.status_code == 422


async def test_async_sdk_batch(open_server: Served, fresh_scope: str) -> None:
    words = _seed(open_server, fresh_scope)
    async with PowerContextClient(open_server.url) as client:
        memory = client.memory.for_scope(fresh_scope)
        pages = await memory.search_batch(
            [SearchMemoryRequest(query=w, limit=1, mode="fts") for w in words],
            include_rerank="redacted",
        )
        assert [p.hits[0].text for p in pages] == [f"the {w} lives by the river" for w in words]
        assert {p.memory_ref for p in pages} == {MemoryRef(scope_id=fresh_scope, revision=1)}
        assert all(p.rerank_redacted is not None for p in pages)
        with pytest.raises(MemoryValidationError):
            await memory.search_batch([])


def test_sync_sdk_batch_reports_typed_errors(open_server: Served, fresh_scope: str) -> None:
    words = _seed(open_server, fresh_scope)
    with SyncPowerContextClient(open_server.url) as client:
        memory = client.memory.for_scope(fresh_scope)
        pages = memory.search_batch([SearchMemoryRequest(query=w, mode="fts") for w in words[:2]])
        assert [p.hits[0].text for p in pages] == [f"the {w} lives by the river" for w in words[:2]]
        memory.remember(RememberMemoryRequest(text="one more"))
        with pytest.raises(MemoryValidationError, match="limit of 64"):
            memory.search_batch([SearchMemoryRequest(query=f"q{i}") for i in range(65)])


async def test_mcp_search_batch(open_server: Served, fresh_scope: str) -> None:
    words = _seed(open_server, fresh_scope)
    async with mcp_client(open_server) as client:
        found = _ok(
            await client.call_tool(
                "search_batch",
                {
                    "scope_id": fresh_scope,
                    "searches": [{"query": w, "limit": 1, "mode": "fts"} for w in words],
                },
            )
        )
    body = BatchSearchResponse.model_validate(found)
    assert [p.hits[0].text for p in body.pages] == [f"the {w} lives by the river" for w in words]
    assert "rerank" not in found["pages"][0]


def test_cli_reads_queries_from_stdin_and_from_a_file(
    open_server: Served, fresh_scope: str, tmp_path: Path
) -> None:
    words = _seed(open_server, fresh_scope)
    env = {"POWERCONTEXT_CLIENT_SERVER_URL": open_server.url}
    args = ["memory", "search-batch", "--scope", fresh_scope, "--limit", "1", "--mode", "fts"]
    piped = runner.invoke(app, [*args, "--json"], input="\n".join(words) + "\n\n", env=env)
    assert piped.exit_code == 0, piped.output
    body = json.loads(piped.stdout)
    assert [p["query"] for p in body["pages"]] == words
    assert [p["hits"][0]["text"] for p in body["pages"]] == [
        f"the {w} lives by the river" for w in words
    ]
    assert body["memory_ref"] == {"scope_id": fresh_scope, "revision": 1}
    queries = tmp_path / "queries.txt"
    queries.write_text(f"{words[2]}\n{words[0]}\n", encoding="utf-8")
    shown = runner.invoke(app, [*args, str(queries)], env=env)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.index(f"[1] {words[2]}") < shown.stdout.index(f"[2] {words[0]}")
    assert f"the {words[2]} lives by the river" in shown.stdout
    empty = runner.invoke(app, args, input="\n \n", env=env)
    assert empty.exit_code != 0 and "no queries" in empty.stderr


def test_openapi_names_the_batch_route(open_server: Served) -> None:
    spec = httpx.get(f"{open_server.url}/openapi.json").json()
    assert "/v1/memory/search/batch" in spec["paths"]


def _seed_kinds(served: Served, scope: str) -> str:
    """Two revisions: rev 1 has a `note` and a `task`, rev 2 adds a second `task`."""
    word = f"kestrel{uuid.uuid4().hex[:6]}"
    with served.client() as http:
        first = [
            {"kind": "note", "text": f"the {word} nests high", "metadata": {"n": 1}},
            {"kind": "task", "text": f"count the {word} eggs", "metadata": {"n": 2}},
        ]
        later = [{"kind": "task", "text": f"ring the {word} chicks", "metadata": {"n": 3}}]
        for entries in (first, later):
            reply = http.post("/v1/memory/remember", json={"scope_id": scope, "entries": entries})
            assert reply.status_code == 200, reply.text
    return word


def test_http_batch_items_carry_filters_and_floors_at_one_revision(
    open_server: Served, fresh_scope: str
) -> None:
    word = _seed_kinds(open_server, fresh_scope)
    searches = [
        {"query": word, "mode": "fts", "filter": {"kinds": ["task"]}},
        {"query": word, "mode": "fts", "filter": {"metadata": {"n": {"eq": 1}}}},
        {"query": word, "mode": "fts", "min_score": 1e9},
        {"query": word, "mode": "fts"},
    ]
    with open_server.client() as http:
        reply = http.post(
            "/v1/memory/search/batch",
            json={"scope_id": fresh_scope, "searches": searches, "revision": 1},
        )
        assert reply.status_code == 200, reply.text
        pages = BatchSearchResponse.model_validate(reply.json()).pages
        assert [len(p.hits) for p in pages] == [1, 1, 0, 2], "revision 1 holds two entries"
        assert pages[0].hits[0].kind == "task" and pages[1].hits[0].metadata == {"n": 1}
        assert all(p.memory_ref and p.memory_ref.revision == 1 for p in pages)
        head = http.post(
            "/v1/memory/search/batch", json={"scope_id": fresh_scope, "searches": searches[:1]}
        )
        assert len(head.json()["pages"][0]["hits"]) == 2, "the head holds both tasks"
        unknown = http.post(
            "/v1/memory/search/batch",
            json={"scope_id": fresh_scope, "searches": searches[:1], "revision": 99},
        )
        assert unknown.status_code == 404


async def test_sdks_send_filters_floors_and_the_batch_revision(
    open_server: Served, fresh_scope: str
) -> None:
    word = _seed_kinds(open_server, fresh_scope)
    tasks = {"kinds": ["task"]}
    requests = [
        SearchMemoryRequest.model_validate(
            {"query": word, "mode": "fts", "filter": tasks, "revision": 1}
        ),
        SearchMemoryRequest(query=word, mode="vector", min_similarity=1.0, revision=1),
    ]
    async with PowerContextClient(open_server.url) as client:
        pages = await client.memory.for_scope(fresh_scope).search_batch(requests)
    assert [len(p.hits) for p in pages] == [1, 0]
    with SyncPowerContextClient(open_server.url) as sync_client:
        memory = sync_client.memory.for_scope(fresh_scope)
        assert [len(p.hits) for p in memory.search_batch(requests)] == [1, 0]
        mixed = [requests[0], SearchMemoryRequest(query=word, revision=2)]
        with pytest.raises(MemoryValidationError, match="one revision"):
            memory.search_batch(mixed)


async def test_mcp_batch_filters(open_server: Served, fresh_scope: str) -> None:
    word = _seed_kinds(open_server, fresh_scope)
    async with mcp_client(open_server) as client:
        found = _ok(
            await client.call_tool(
                "search_batch",
                {
                    "scope_id": fresh_scope,
                    "revision": 1,
                    "searches": [{"query": word, "mode": "fts", "filter": {"kinds": ["task"]}}],
                },
            )
        )
    assert [h["kind"] for h in found["pages"][0]["hits"]] == ["task"]


def test_cli_batch_filter_floor_and_revision(open_server: Served, fresh_scope: str) -> None:
    word = _seed_kinds(open_server, fresh_scope)
    env = {"POWERCONTEXT_CLIENT_SERVER_URL": open_server.url}
    args = ["memory", "search-batch", "--scope", fresh_scope, "--mode", "fts", "--json"]
    shown = runner.invoke(
        app,
        [*args, "--filter", '{"kinds": ["task"]}', "--revision", "2"],
        input=f"{word}\n",
        env=env,
    )
    assert shown.exit_code == 0, shown.output
    assert len(json.loads(shown.stdout)["pages"][0]["hits"]) == 2
    floored = runner.invoke(app, [*args, "--min-score", "1e9"], input=f"{word}\n", env=env)
    assert floored.exit_code == 0, floored.output
    assert json.loads(floored.stdout)["pages"][0]["hits"] == []
