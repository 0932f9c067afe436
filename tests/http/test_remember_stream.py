"""POST /v1/memory/remember/stream: a batch as JSON lines, one call and one revision, with its
bounds (lines, entries, bytes) and its errors naming the line, on a real server."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Message

from powercontext.client import SyncPowerContextClient
from powercontext.config import HttpConfig
from powercontext.memory import RememberMemoryRequest
from powercontext.server import create_app
from tests.http.conftest import BATCH_LIMIT, KEY_A, Served, _settings
from tests.http.live import live_server

ROUTE = "/v1/memory/remember/stream"
NDJSON = {"content-type": "application/x-ndjson"}


def _lines(entries: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(entry) + "\n" for entry in entries).encode("utf-8")


def _post(client: httpx.Client, body: bytes, **query: object) -> httpx.Response:
    return client.post(ROUTE, params=query, content=body, headers=NDJSON)


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    message: str = response.json()["error"]["message"]
    return message


def test_a_batch_of_lines_is_one_revision_and_a_retry_writes_nothing(
    bare_server: Served, fresh_scope: str
) -> None:
    entries = [
        {"text": f"turn {i}", "kind": "turn", "thread": "s1", "metadata": {"i": i}}
        for i in range(BATCH_LIMIT)
    ]
    body = _lines(entries)
    with bare_server.client() as client:
        first = _post(client, body, scope_id=fresh_scope, idempotency_key="k", expected_revision=0)
        assert first.status_code == 200, first.text
        again = _post(client, body, scope_id=fresh_scope, idempotency_key="k", expected_revision=0)
        other = _post(client, _lines(entries[:1]), scope_id=fresh_scope, idempotency_key="k")
        head = client.post("/v1/memory/head", json={"scope_id": fresh_scope}).json()
        listed = client.post(
            "/v1/memory/entries/list", json={"scope_id": fresh_scope, "limit": 1000}
        ).json()
    written = first.json()
    assert written["memory_ref"] == {"scope_id": fresh_scope, "revision": 1}
    assert [e["text"] for e in written["entries"]] == [e["text"] for e in entries]
    assert again.json() == written  # the original answer
    _error(other, 409, "idempotency_conflict")
    assert head["memory_ref"]["revision"] == 1
    assert [(e["text"], e["thread"], e["metadata"]) for e in listed["entries"]] == [
        (e["text"], "s1", e["metadata"]) for e in entries
    ]


def test_a_bad_line_is_named_and_nothing_is_written(bare_server: Served, fresh_scope: str) -> None:
    good = json.dumps({"text": "fine"})
    with bare_server.client() as client:
        missing = _post(client, f'{good}\n\n{{"txt": "x"}}\n'.encode(), scope_id=fresh_scope)
        broken = _post(client, f"{good}\nnot json\n".encode(), scope_id=fresh_scope)
        bad_date = _post(
            client, _lines([{"text": "x", "occurred_at": "8 May"}]), scope_id=fresh_scope
        )
        empty = _post(client, b"\n\n", scope_id=fresh_scope)
        no_scope = _post(client, f"{good}\n".encode())
        head = client.post("/v1/memory/head", json={"scope_id": fresh_scope}).json()
    assert _error(missing, 422, "validation_error").startswith("line 3: text: Field required")
    assert _error(broken, 422, "validation_error").startswith("line 2: Invalid JSON")
    assert _error(bad_date, 422, "validation_error").startswith("line 1: occurred_at:")
    assert _error(empty, 422, "validation_error").startswith("the body holds no entry")
    assert _error(no_scope, 422, "validation_error") == "query.scope_id: Field required"
    assert head["memory_ref"] is None


def test_more_entries_than_the_runtime_bound_is_413(bare_server: Served, fresh_scope: str) -> None:
    body = _lines([{"text": f"e{i}"} for i in range(BATCH_LIMIT + 1)])
    with bare_server.client() as client:
        refused = _post(client, body, scope_id=fresh_scope)
    assert "POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_ENTRIES" in _error(
        refused, 413, "payload_too_large"
    )


def test_a_key_reaches_only_its_scopes(auth_server: Served) -> None:
    with auth_server.client(KEY_A) as client:
        refused = _post(client, _lines([{"text": "x"}]), scope_id="scope-b")
        allowed = _post(client, _lines([{"text": "x"}]), scope_id="scope-a")
    _error(refused, 403, "forbidden")
    assert allowed.status_code == 200, allowed.text


@pytest.fixture(scope="module")
def small_stream_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("stream-limit") / "s.db"
    settings = _settings(db, "none", HttpConfig(max_remember_stream_bytes=64 * 1024))
    with live_server(create_app(settings)) as server:
        yield server.url


def test_the_body_is_bounded_in_bytes(small_stream_server: str) -> None:
    body = _lines([{"text": "y" * 4000} for _ in range(20)])  # 80 KB of short lines
    with httpx.Client(base_url=small_stream_server, timeout=30) as client:
        refused = _post(client, body, scope_id="big")
        head = client.post("/v1/memory/head", json={"scope_id": "big"}).json()
    assert "POWERCONTEXT_SERVER_HTTP_MAX_REMEMBER_STREAM_BYTES" in _error(
        refused, 413, "payload_too_large"
    )
    assert head["memory_ref"] is None


def test_the_sdk_writes_ten_thousand_entries_in_one_revision(
    open_server: Served, fresh_scope: str
) -> None:
    """api-notes: remember_many takes 10,000+ entries in one call and one revision."""
    batch = [RememberMemoryRequest(text=f"note {i} on the release plan") for i in range(10_000)]
    with SyncPowerContextClient(open_server.url) as client:
        memory = client.memory.for_scope(fresh_scope)
        written = memory.remember_many(batch)
        assert written.memory_ref.revision == 1 and len(written.entries) == 10_000
        assert memory.head() == written.memory_ref
        assert {c.revision for c in memory.changes(since_revision=0).changes} == {1}


async def test_a_client_that_leaves_mid_body_writes_nothing_and_is_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(_settings(tmp_path / "gone.db", "none"))
    chunks: list[Message] = [
        {"type": "http.request", "body": b'{"text": "first"}\n{"te', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": ROUTE,
        "raw_path": ROUTE.encode(),
        "query_string": b"scope_id=left",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/x-ndjson")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    async with app.router.lifespan_context(app):
        with caplog.at_level(logging.INFO, logger="powercontext.http"):
            await app(scope, receive, send)
        runtime = app.state.powercontext.runtime
        assert await runtime.memory.for_scope("left").head() is None
    assert not [m for m in sent if m["type"] == "http.response.start"]  # no one to answer
    assert "unhandled error" not in caplog.text
    assert "client disconnected" in caplog.text
