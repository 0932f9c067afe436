"""Scope export and import end to end: HTTP v1 (streamed both ways), the SDK (async and
sync) and the CLI against a server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from powercontext.cli import app
from powercontext.client import PowerContextClient, SyncPowerContextClient
from powercontext.client.errors import ApiError, ConnectionFailedError
from powercontext.memory import RememberMemoryRequest
from powercontext.memory.transfer import FORMAT, MAX_LINE_BYTES
from powercontext.server import create_app
from powercontext.server.contract import generate_openapi
from tests.http.conftest import BATCH_LIMIT, BODY_LIMIT, KEY_A, Served
from tests.http.test_mcp import _ok, mcp_client

runner = CliRunner()


def _seed(served: Served, scope: str, count: int = 3) -> None:
    entries = [
        {
            "kind": "message",
            "text": f"turn {i} about the harbour",
            "metadata": {"n": i},
            "thread": "t-1",
            "occurred_at": f"2024-01-0{i + 1}T10:00:00Z",
        }
        for i in range(count)
    ]
    with served.client() as http:
        reply = http.post("/v1/memory/remember", json={"scope_id": scope, "entries": entries})
        assert reply.status_code == 200, reply.text


def _entries(served: Served, scope: str) -> list[tuple[object, ...]]:
    with served.client() as http:
        reply = http.post("/v1/memory/entries/list", json={"scope_id": scope})
    assert reply.status_code == 200, reply.text
    return [
        (e["entry_id"], e["kind"], e["text"], e["metadata"], e["thread"], e["occurred_at"])
        for e in reply.json()["entries"]
    ]


def _header(count: int) -> str:
    return json.dumps(
        {
            "format": FORMAT,
            "version": 1,
            "scope_id": "elsewhere",
            "revision": 1,
            "entry_count": count,
            "exported_at": "2024-01-01T00:00:00Z",
        }
    )


def test_http_export_then_import_round_trips(open_server: Served, fresh_scope: str) -> None:
    _seed(open_server, fresh_scope)
    target = f"{fresh_scope}-copy"
    with open_server.client() as http:
        exported = http.get("/v1/memory/export", params={"scope_id": fresh_scope})
        assert exported.status_code == 200, exported.text
        assert exported.headers["content-type"].startswith("application/x-ndjson")
        lines = exported.text.splitlines()
        assert json.loads(lines[0])["entry_count"] == 3 and len(lines) == 4
        imported = http.post(
            "/v1/memory/import",
            params={"scope_id": target},
            content=exported.content,
            headers={"content-type": "application/x-ndjson"},
        )
        assert imported.status_code == 200, imported.text
        body = imported.json()
        assert (body["added"], body["skipped"], body["revisions"]) == (3, 0, 1)
        assert body["memory_ref"] == {"scope_id": target, "revision": 1}
        again = http.post(
            "/v1/memory/import", params={"scope_id": target}, content=exported.content
        )
        assert again.status_code == 409 and again.json()["error"]["code"] == "revision_conflict"
        skipped = http.post(
            "/v1/memory/import",
            params={"scope_id": target, "on_existing": "skip"},
            content=exported.content,
        )
        assert skipped.status_code == 200 and skipped.json()["skipped"] == 3
    assert _entries(open_server, target) == _entries(open_server, fresh_scope)


def test_http_import_streams_past_the_body_limit_in_batches(
    bare_server: Served, fresh_scope: str
) -> None:
    """The import body is read line by line, not buffered: far over the server's body limit,
    it is written one revision per batch of at most POWERCONTEXT_..._MAX_BATCH_ENTRIES."""
    count = 3 * BATCH_LIMIT
    lines = [_header(count)] + [
        json.dumps({"entry_id": f"e{i}", "text": f"note {i} " + "x" * 600}) for i in range(count)
    ]
    body = ("\n".join(lines) + "\n").encode()
    assert len(body) > BODY_LIMIT

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 4096):
            yield body[start : start + 4096]

    with bare_server.client() as http:
        reply = http.post("/v1/memory/import", params={"scope_id": fresh_scope}, content=chunks())
        assert reply.status_code == 200, reply.text
        assert (reply.json()["added"], reply.json()["revisions"]) == (count, 3)
        too_big = http.post("/v1/memory/remember", content=body)
        assert too_big.status_code == 413, "other routes keep the body limit"


def test_http_import_refuses_a_line_over_the_limit(open_server: Served, fresh_scope: str) -> None:
    huge = json.dumps({"entry_id": "e", "text": "x" * (MAX_LINE_BYTES + 10)})
    with open_server.client() as http:
        reply = http.post(
            "/v1/memory/import",
            params={"scope_id": fresh_scope},
            content=f"{_header(1)}\n{huge}\n",
        )
        assert reply.status_code == 413
        assert "line 2" in reply.json()["error"]["message"]
        bad = http.post(
            "/v1/memory/import", params={"scope_id": fresh_scope}, content="not an export\n"
        )
        assert bad.status_code == 422 and "line 1" in bad.json()["error"]["message"]


def test_http_export_of_an_unknown_scope_is_404(open_server: Served) -> None:
    with open_server.client() as http:
        reply = http.get("/v1/memory/export", params={"scope_id": f"none-{uuid.uuid4().hex}"})
    assert reply.status_code == 404 and reply.json()["error"]["code"] == "not_found"


def test_http_transfer_needs_a_key_for_the_scope(auth_server: Served) -> None:
    with auth_server.client(KEY_A) as http:
        assert http.get("/v1/memory/export", params={"scope_id": "scope-b"}).status_code == 403
        reply = http.post("/v1/memory/import", params={"scope_id": "scope-b"}, content=b"")
        assert reply.status_code == 403
    with auth_server.client() as http:
        assert http.get("/v1/memory/export", params={"scope_id": "scope-a"}).status_code == 401


async def test_async_sdk_round_trip_with_progress(open_server: Served, fresh_scope: str) -> None:
    async with PowerContextClient(open_server.url) as client:
        source = client.memory.for_scope(fresh_scope)
        await source.remember_many(
            [RememberMemoryRequest(text=f"fact {i} on tides", thread="t") for i in range(250)]
        )
        lines = [line async for line in source.export_lines()]
        assert len(lines) == 251 and all(line.endswith("\n") for line in lines)
        target = client.memory.for_scope(f"{fresh_scope}-async")
        ticks: list[tuple[int, int | None]] = []
        result = await target.import_lines(lines, progress=lambda d, t: ticks.append((d, t)))
        assert result.added == 250 and result.source.scope_id == fresh_scope
        assert ticks == [(100, 250), (200, 250), (250, 250)]
        with pytest.raises(ApiError) as refused:
            [line async for line in client.memory.for_scope("never-written").export_lines()]
        assert refused.value.code == "not_found"
    assert _entries(open_server, f"{fresh_scope}-async") == _entries(open_server, fresh_scope)


def test_sync_sdk_round_trip_replacing(open_server: Served, fresh_scope: str) -> None:
    _seed(open_server, fresh_scope)
    with SyncPowerContextClient(open_server.url) as client:
        source = client.memory.for_scope(fresh_scope)
        lines = list(source.export_lines(revision=1))
        target = client.memory.for_scope(f"{fresh_scope}-sync")
        assert target.import_lines(lines).added == 3
        result = target.import_lines(iter(lines), on_existing="replace")
        assert (result.added, result.replaced) == (0, 3)
        assert result.memory_ref is not None and result.memory_ref.revision == 2


def test_sdk_reports_a_connection_failure() -> None:
    with (
        SyncPowerContextClient("http://127.0.0.1:9", max_retries=0) as client,
        pytest.raises(ConnectionFailedError, match="cannot reach"),
    ):
        list(client.memory.for_scope("a").export_lines())


def test_cli_export_and_import_through_a_server(
    open_server: Served, fresh_scope: str, tmp_path: Path
) -> None:
    _seed(open_server, fresh_scope)
    dump = tmp_path / "scope.jsonl"
    remote = ["--server-url", open_server.url]
    exported = runner.invoke(app, ["memory", "export", "-s", fresh_scope, "-o", str(dump), *remote])
    assert exported.exit_code == 0, exported.output
    assert "3/3" in exported.stderr
    target = f"{fresh_scope}-cli"
    imported = runner.invoke(app, ["memory", "import", str(dump), "-s", target, *remote])
    assert imported.exit_code == 0, imported.output
    assert "3 added" in imported.stdout and "3/3" in imported.stderr
    assert _entries(open_server, target) == _entries(open_server, fresh_scope)


def test_the_contract_documents_the_streamed_routes() -> None:
    """Raw routes of the table: query parameters from their models, NDJSON bodies, JSON errors."""
    paths = generate_openapi(create_app())["paths"]
    export, imported = paths["/v1/memory/export"]["get"], paths["/v1/memory/import"]["post"]
    assert {(p["name"], p["required"]) for p in export["parameters"]} == {
        ("scope_id", True),
        ("revision", False),
    }
    on_existing = {p["name"]: p for p in imported["parameters"]}["on_existing"]
    assert on_existing["schema"]["enum"] == ["skip", "replace", "fail"]
    assert "application/x-ndjson" in export["responses"]["200"]["content"]
    assert "application/x-ndjson" in imported["requestBody"]["content"]
    error = export["responses"]["404"]["content"]["application/json"]["schema"]
    assert error["$ref"].endswith("/ErrorEnvelope")


async def test_mcp_exports_and_imports_a_page_at_a_time(
    open_server: Served, fresh_scope: str
) -> None:
    _seed(open_server, fresh_scope, count=5)
    target = f"{fresh_scope}-mcp-copy"
    async with mcp_client(open_server) as client:
        first = _ok(await client.call_tool("export_page", {"scope_id": fresh_scope, "limit": 2}))
        assert first["header"]["entry_count"] == 5 and first["next_offset"] == 2
        revision = first["header"]["revision"]
        pages, offset = [first], first["next_offset"]
        _seed(open_server, fresh_scope, count=1)  # a later write: the pages keep one revision
        while offset is not None:
            page = _ok(
                await client.call_tool(
                    "export_page",
                    {"scope_id": fresh_scope, "revision": revision, "offset": offset, "limit": 2},
                )
            )
            pages.append(page)
            offset = page["next_offset"]
        assert [len(p["entries"]) for p in pages] == [2, 2, 1]
        for page in pages:
            written = _ok(
                await client.call_tool(
                    "import_entries",
                    {"scope_id": target, "header": page["header"], "entries": page["entries"]},
                )
            )
            assert written["added"] == len(page["entries"])
        again = _ok(
            await client.call_tool(
                "import_entries",
                {
                    "scope_id": target,
                    "header": first["header"],
                    "entries": first["entries"],
                    "on_existing": "skip",
                },
            )
        )
        assert again["skipped"] == 2 and again["added"] == 0
    copied = _entries(open_server, target)
    assert len(copied) == 5
    assert {e[0] for e in copied} == {e["entry_id"] for p in pages for e in p["entries"]}
