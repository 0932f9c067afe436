"""MCP tools at /mcp, driven by the official SDK client against the live uvicorn servers."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from powercontext.server.erasure import (
    ForgetEntriesRequest,
    ForgetResultModel,
    ForgetScopeBody,
)
from powercontext.server.history import EntryByIdRequest, EntryHistoryModel, HistoryRequest
from powercontext.server.mcp import MEMORY_TOOLS
from powercontext.server.schemas import (
    ChangesPageModel,
    ChangesRequest,
    EntriesPageModel,
    EntryModel,
    GetEntryRequest,
    HeadRequest,
    HeadResponse,
    ListEntriesRequest,
    ReactivateEntryRequest,
    RememberBatchRequest,
    RememberOneRequest,
    RetireEntryRequest,
    ReviseEntryRequest,
    WriteResultModel,
)
from powercontext.server.scopes import ListScopesRequest, ScopesResponse
from powercontext.server.search_schemas import (
    BatchSearchRequest,
    BatchSearchResponse,
    SearchRequest,
    SearchResponse,
)
from powercontext.server.transfer import (
    ExportPageRequest,
    ExportPageResponse,
    ImportEntriesRequest,
    ImportResponse,
)
from tests.http.conftest import KEY_A, KEY_ALL, KEY_B, Served

TOOL_MODELS = {
    "remember": (RememberOneRequest, WriteResultModel),
    "search": (SearchRequest, SearchResponse),
    "search_batch": (BatchSearchRequest, BatchSearchResponse),
    "list_entries": (ListEntriesRequest, EntriesPageModel),
    "get_entry": (GetEntryRequest, EntryModel),
    "retire_entry": (RetireEntryRequest, WriteResultModel),
    "remember_batch": (RememberBatchRequest, WriteResultModel),
    "revise_entry": (ReviseEntryRequest, WriteResultModel),
    "reactivate_entry": (ReactivateEntryRequest, WriteResultModel),
    "entry_history": (HistoryRequest, EntryHistoryModel),
    "get_entry_by_id": (EntryByIdRequest, EntryModel),
    "list_changes": (ChangesRequest, ChangesPageModel),
    "head": (HeadRequest, HeadResponse),
    "list_scopes": (ListScopesRequest, ScopesResponse),
    "forget_entry": (ForgetEntriesRequest, ForgetResultModel),
    "forget_scope": (ForgetScopeBody, ForgetResultModel),
    "export_page": (ExportPageRequest, ExportPageResponse),
    "import_entries": (ImportEntriesRequest, ImportResponse),
}


@asynccontextmanager
async def mcp_client(
    served: Served, key: str | None = None, *, mode: str = "auto"
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    transport = streamable_http_client(f"{served.url}/mcp", http_client=http)
    async with http, Client(transport, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        yield client


def _ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    # The text block carries the same JSON, for clients without structured content.
    text = result.content[0]
    assert text.type == "text"
    assert json.loads(text.text) == result.structured_content
    return result.structured_content


def _error_text(result: CallToolResult) -> str:
    assert result.is_error
    assert result.structured_content is None
    text = result.content[0]
    assert text.type == "text"
    return text.text


def _unique(word: str) -> str:
    return f"{word}{uuid.uuid4().hex[:8]}"


async def test_tools_are_listed_with_the_v1_model_schemas(open_server: Served) -> None:
    async with mcp_client(open_server) as client:
        listing = await client.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == set(TOOL_MODELS) == {tool.name for tool in MEMORY_TOOLS}
    for name, (request, response) in TOOL_MODELS.items():
        assert tools[name].input_schema == request.model_json_schema(mode="validation")
        assert tools[name].output_schema == response.model_json_schema(mode="serialization")
        assert tools[name].description
    assert tools["search"].annotations is not None
    assert tools["search"].annotations.read_only_hint is True
    assert tools["retire_entry"].annotations is not None
    assert tools["retire_entry"].annotations.destructive_hint is True


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_tool_round_trips(open_server: Served, fresh_scope: str, mode: str) -> None:
    word = _unique("heron")
    async with mcp_client(open_server, mode=mode) as client:
        first = _ok(
            await client.call_tool(
                "remember",
                {"scope_id": fresh_scope, "text": f"the {word} nests by the lake", "kind": "fact"},
            )
        )
        second = _ok(
            await client.call_tool(
                "remember",
                {"scope_id": fresh_scope, "text": f"a {word} ate a fish", "metadata": {"n": 2}},
            )
        )
        assert first["memory_ref"]["revision"] == 1 and second["memory_ref"]["revision"] == 2

        found = _ok(await client.call_tool("search", {"scope_id": fresh_scope, "query": word}))
        SearchResponse.model_validate(found)
        assert found["memory_ref"] == {"scope_id": fresh_scope, "revision": 2}
        # The scripted reranker reverses the coarse pool, so this is the reranked order.
        texts = [hit["text"] for hit in found["hits"]]
        assert sorted(texts) == sorted([f"the {word} nests by the lake", f"a {word} ate a fish"])
        assert "rerank" not in found

        listed = _ok(await client.call_tool("list_entries", {"scope_id": fresh_scope}))
        assert [e["text"] for e in listed["entries"]] == [
            f"the {word} nests by the lake",
            f"a {word} ate a fish",
        ]
        assert listed["entries"][1]["metadata"] == {"n": 2}

        citation = first["entries"][0]["citation"]
        entry = _ok(
            await client.call_tool("get_entry", {"scope_id": fresh_scope, "citation": citation})
        )
        assert entry["text"] == f"the {word} nests by the lake" and entry["active"] is True

        retired = _ok(
            await client.call_tool(
                "retire_entry",
                {"scope_id": fresh_scope, "citation": citation, "reason": "moved away"},
            )
        )
        assert retired["memory_ref"]["revision"] == 3 and retired["entries"] == []

        after = _ok(await client.call_tool("search", {"scope_id": fresh_scope, "query": word}))
        assert [hit["text"] for hit in after["hits"]] == [f"a {word} ate a fish"]
        again = _ok(
            await client.call_tool("get_entry", {"scope_id": fresh_scope, "citation": citation})
        )
        assert again["active"] is False
        await _revision_tools_round_trip(client, fresh_scope, word, first["entries"][0])


async def _revision_tools_round_trip(
    client: Client, scope: str, word: str, retired: dict[str, Any]
) -> None:
    """reactivate, revise, batch remember, head, changes and history, after a retire at r3."""
    current = retired["citation"] | {"memory_ref": {"scope_id": scope, "revision": 3}}
    back = _ok(
        await client.call_tool(
            "reactivate_entry", {"scope_id": scope, "citation": current, "reason": "back"}
        )
    )
    assert back["memory_ref"]["revision"] == 4
    revised = _ok(
        await client.call_tool(
            "revise_entry",
            {"scope_id": scope, "citation": back["entries"][0]["citation"], "text": f"{word} v3"},
        )
    )
    assert revised["entries"][0]["version"] == 3
    entries = [{"text": f"{word} b1"}, {"text": f"{word} b2"}]
    keyed = {"scope_id": scope, "entries": entries, "idempotency_key": f"{word}-batch"}
    batch = _ok(await client.call_tool("remember_batch", keyed))
    assert batch["memory_ref"]["revision"] == 6 and len(batch["entries"]) == 2
    assert _ok(await client.call_tool("remember_batch", keyed)) == batch  # a retry: no rewrite
    head = _ok(await client.call_tool("head", {"scope_id": scope}))
    assert head["memory_ref"] == {"scope_id": scope, "revision": 6}
    log = _ok(await client.call_tool("list_changes", {"scope_id": scope, "since_revision": 2}))
    assert [c["op"] for c in log["changes"]] == ["retire", "reactivate", "revise", "add", "add"]
    history = _ok(
        await client.call_tool(
            "entry_history", {"scope_id": scope, "entry_id": retired["entry_id"]}
        )
    )
    assert [c["op"] for c in history["changes"]] == ["revise", "reactivate", "retire", "add"]
    assert history["versions"][0]["entry"]["text"] == f"{word} v3"
    assert history["active_version"]["text"] == f"{word} v3"
    then = _ok(
        await client.call_tool(
            "entry_history", {"scope_id": scope, "entry_id": retired["entry_id"], "revision": 3}
        )
    )
    assert [c["op"] for c in then["changes"]] == ["retire", "add"]
    assert then["active_version"] is None
    at_four = _ok(
        await client.call_tool(
            "get_entry_by_id", {"scope_id": scope, "entry_id": retired["entry_id"], "revision": 4}
        )
    )
    assert at_four["version"] == 2 and at_four["citation"]["memory_ref"]["revision"] == 4
    past = _ok(
        await client.call_tool(
            "search", {"scope_id": scope, "query": f"{word} v3", "mode": "fts", "revision": 3}
        )
    )
    assert all(hit["citation"]["memory_ref"]["revision"] == 3 for hit in past["hits"])
    assert f"{word} v3" not in [hit["text"] for hit in past["hits"]]
    only_batch = _ok(
        await client.call_tool(
            "list_entries",
            {"scope_id": scope, "filter": {"created_after": batch["entries"][0]["created_at"]}},
        )
    )
    assert sorted(e["text"] for e in only_batch["entries"]) == [f"{word} b1", f"{word} b2"]


async def test_tool_errors_name_the_code_without_echoing_input(
    open_server: Served, fresh_scope: str
) -> None:
    secret = _unique("secret-text-")
    async with mcp_client(open_server) as client:
        invalid = await client.call_tool(
            "remember", {"scope_id": fresh_scope, "text": secret, "kind": "k" * 500}
        )
        text = _error_text(invalid)
        assert text.startswith("validation_error: kind:")
        assert secret not in text and "k" * 100 not in text

        missing = await client.call_tool(
            "get_entry",
            {
                "scope_id": fresh_scope,
                "citation": {
                    "memory_ref": {"scope_id": fresh_scope, "revision": 1},
                    "entry_id": "nope",
                    "entry_version_id": "nope",
                },
            },
        )
        assert _error_text(missing).startswith("not_found:")

        _ok(await client.call_tool("remember", {"scope_id": fresh_scope, "text": "one entry"}))
        conflict = await client.call_tool(
            "remember", {"scope_id": fresh_scope, "text": "stale write", "expected_revision": 0}
        )
        text = _error_text(conflict)
        assert text.startswith("revision_conflict:")
        assert '"actual_revision": 1' in text

        for page in ({"limit": True}, {"offset": "7"}, {"revision": True}):
            refused = await client.call_tool("export_page", {"scope_id": fresh_scope, **page})
            assert _error_text(refused).startswith("validation_error:"), page


async def test_missing_or_unknown_key_is_refused_over_http(auth_server: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(base_url=auth_server.url) as http:
        responses = [
            await http.post("/mcp", json=body, headers=headers | auth)
            for auth in ({}, {"Authorization": "Bearer not-a-configured-key"})
        ]
    for response in responses:
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["code"] == "unauthorized"
    # The SDK client surfaces the refused handshake as an MCPError (inside its task groups).
    with pytest.raises(BaseException) as failure:
        async with mcp_client(auth_server, "wrong-key-0000") as client:
            await client.list_tools()
    assert any(isinstance(exc, MCPError) for exc in _leaves(failure.value))


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def test_a_key_only_reaches_its_own_scopes(auth_server: Served) -> None:
    word = _unique("otter")
    async with mcp_client(auth_server, KEY_A) as client_a:
        written = _ok(
            await client_a.call_tool("remember", {"scope_id": "scope-a", "text": f"{word} in a"})
        )
        denied_write = await client_a.call_tool(
            "remember", {"scope_id": "scope-b", "text": f"{word} sneaks into b"}
        )
        assert _error_text(denied_write).startswith("forbidden:")
    citation = written["entries"][0]["citation"]

    async with mcp_client(auth_server, KEY_B) as client_b:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("search", {"scope_id": "scope-a", "query": word}),
            ("list_entries", {"scope_id": "scope-a"}),
            ("get_entry", {"scope_id": "scope-a", "citation": citation}),
            ("retire_entry", {"scope_id": "scope-a", "citation": citation}),
            ("reactivate_entry", {"scope_id": "scope-a", "citation": citation}),
            ("revise_entry", {"scope_id": "scope-a", "citation": citation, "text": "x"}),
            ("remember_batch", {"scope_id": "scope-a", "entries": [{"text": "x"}]}),
            ("entry_history", {"scope_id": "scope-a", "entry_id": citation["entry_id"]}),
            ("list_changes", {"scope_id": "scope-a"}),
            ("head", {"scope_id": "scope-a"}),
        ]
        for name, arguments in calls:
            text = _error_text(await client_b.call_tool(name, arguments))
            assert text.startswith("forbidden:"), name
            assert word not in text
        # Naming its own scope with scope-a's citation finds nothing either.
        crossed = await client_b.call_tool(
            "get_entry", {"scope_id": "scope-b", "citation": citation}
        )
        assert _error_text(crossed).startswith("not_found:")
        own = _ok(await client_b.call_tool("search", {"scope_id": "scope-b", "query": word}))
        assert own["hits"] == []

    async with mcp_client(auth_server, KEY_ALL) as client_all:
        found = _ok(await client_all.call_tool("search", {"scope_id": "scope-a", "query": word}))
        assert [hit["text"] for hit in found["hits"]] == [f"{word} in a"]
        listed = _ok(await client_all.call_tool("list_entries", {"scope_id": "scope-b"}))
        assert all(word not in e["text"] for e in listed["entries"])


async def test_list_scopes_lists_only_the_keys_own_scopes(auth_server: Served) -> None:
    word = _unique("lapwing")
    async with mcp_client(auth_server, KEY_A) as client_a:
        _ok(await client_a.call_tool("remember", {"scope_id": "scope-a", "text": f"{word} a"}))
        listed_a = _ok(await client_a.call_tool("list_scopes", {}))
    async with mcp_client(auth_server, KEY_B) as client_b:
        _ok(await client_b.call_tool("remember", {"scope_id": "scope-b", "text": f"{word} b"}))
        listed_b = _ok(await client_b.call_tool("list_scopes", {}))
    async with mcp_client(auth_server, KEY_ALL) as client_all:
        listed_all = _ok(await client_all.call_tool("list_scopes", {}))
    ScopesResponse.model_validate(listed_a)
    assert [s["scope_id"] for s in listed_a["scopes"]] == ["scope-a"]
    assert [s["scope_id"] for s in listed_b["scopes"]] == ["scope-b"]
    assert {"scope-a", "scope-b"} <= {s["scope_id"] for s in listed_all["scopes"]}
    (a,) = listed_a["scopes"]
    assert a["memory_ref"]["scope_id"] == "scope-a" and a["entry_count"] >= 1
    # The same answer as GET /v1/scopes for that key.
    async with httpx.AsyncClient(base_url=auth_server.url) as http:
        reply = await http.get("/v1/scopes", headers={"Authorization": f"Bearer {KEY_A}"})
    assert reply.json() == listed_a


def test_foreign_host_header_is_rejected(open_server: Served) -> None:
    """DNS rebinding: a loopback server answers only for loopback Host headers."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(
        f"{open_server.url}/mcp",
        json=body,
        headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
    )
    assert response.status_code in (400, 403, 421)


def test_mcp_is_not_in_the_v1_schema(open_server: Served) -> None:
    schema = httpx.get(f"{open_server.url}/openapi.json").json()
    assert not any(path.startswith("/mcp") for path in schema["paths"])
    from powercontext.server import create_app

    assert "/mcp" not in create_app().generated_openapi()["paths"]


async def test_mcp_traffic_is_labelled_mcp_in_metrics(open_server: Served) -> None:
    async with mcp_client(open_server) as client:
        await client.list_tools()
    async with httpx.AsyncClient(base_url=open_server.url) as http:
        text = (await http.get("/metrics")).text
    posts = [
        line
        for line in text.splitlines()
        if line.startswith("powercontext_http_requests_total") and 'method="POST"' in line
    ]
    assert any('route="/mcp"' in line for line in posts), posts
