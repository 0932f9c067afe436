"""The write body limit (issue 19 item 2): a large remember body is refused before it is parsed.

Parsing JSON holds the GIL, so a keyed client's 32 MB batch stalled every other request for
its whole parse. Remember and /mcp bodies have their own, small limit
(POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES); other routes keep the general one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from powercontext.client import PowerContextClient, SyncPowerContextClient
from powercontext.config import DatabaseConfig, HttpConfig, InferenceConfig, ServerSettings
from powercontext.memory import RememberMemoryRequest, RevisionConflictError
from powercontext.server import create_app
from tests.http.conftest import Served
from tests.http.live import live_server
from tests.http.test_gate import _raw_request

WRITE_LIMIT = 65_536


@pytest.fixture(scope="module")
def limited_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("write-limit") / "w.db"
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
        http=HttpConfig(max_write_body_bytes=WRITE_LIMIT),
    )
    with live_server(create_app(settings)) as server:
        yield Served(url=server.url, db_path=db)


def _batch(scope: str, entries: int, text_bytes: int = 1000) -> dict[str, object]:
    return {"scope_id": scope, "entries": [{"text": "x" * text_bytes} for _ in range(entries)]}


def _too_large(response: httpx.Response) -> dict[str, object]:
    assert response.status_code == 413, response.text
    error: dict[str, object] = response.json()["error"]
    assert error["code"] == "payload_too_large"
    assert "POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES" in str(error["message"])
    assert error["details"] == {"max_bytes": WRITE_LIMIT}
    return error


def test_a_declared_large_remember_body_is_refused_before_it_is_read(
    limited_server: Served,
) -> None:
    host = urlsplit(limited_server.url).netloc
    head = (
        "POST /v1/memory/remember HTTP/1.1\r\n"
        f"Host: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {32 * 1024 * 1024}\r\n\r\n"
    )
    # 1 KiB of the declared 32 MB is sent: the answer can only come from the header.
    answer = _raw_request(limited_server.url, head, b"{" + b" " * 1023, timeout=5.0)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_remember_over_the_write_limit_is_413_and_writes_nothing(
    limited_server: Served, fresh_scope: str
) -> None:
    with limited_server.client() as client:
        error = _too_large(client.post("/v1/memory/remember", json=_batch(fresh_scope, 80)))
        assert "/v1/memory/remember/stream" in str(error["message"])

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
            yield b'{"scope_id": "' + fresh_scope.encode() + b'", "entries": ['
            for _ in range(80):
                yield b'{"text": "' + b"y" * 1000 + b'"},'
            yield b'{"text": "end"}]}'

        streamed = client.post(
            "/v1/memory/remember", content=chunks(), headers={"content-type": "application/json"}
        )
        _too_large(streamed)
        head = client.post("/v1/memory/head", json={"scope_id": fresh_scope}).json()
        assert head["memory_ref"] is None
        # Under the limit the same route writes.
        ok = client.post("/v1/memory/remember", json=_batch(fresh_scope, 40))
        assert ok.status_code == 200, ok.text


def test_other_routes_keep_the_general_limit(limited_server: Served, fresh_scope: str) -> None:
    # A list body above the write limit reaches its route (and is judged there: 422, not 413).
    body = {"scope_id": fresh_scope, "cursor": "c" * (WRITE_LIMIT * 2)}
    with limited_server.client() as client:
        answer = client.post("/v1/memory/entries/list", json=body)
    assert answer.status_code == 422, answer.text


def test_mcp_bodies_have_the_write_limit(limited_server: Served, fresh_scope: str) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "remember_batch", "arguments": _batch(fresh_scope, 80)},
    }
    headers = {"accept": "application/json, text/event-stream"}
    with limited_server.client() as client:
        _too_large(client.post("/mcp", content=json.dumps(call), headers=headers))


def test_the_write_limit_is_never_above_the_general_one() -> None:
    from powercontext.server.gate import body_limit

    small = body_limit("/v1/memory/remember", max_body_bytes=4096, max_write_body_bytes=65536)
    assert small.max_bytes == 4096 and small.setting.endswith("_MAX_BODY_BYTES")
    write = body_limit("/mcp", max_body_bytes=1 << 26, max_write_body_bytes=1 << 20)
    assert write.max_bytes == 1 << 20 and write.setting.endswith("MAX_WRITE_BODY_BYTES")
    other = body_limit("/v1/memory/search", max_body_bytes=1 << 26, max_write_body_bytes=1 << 20)
    assert other.max_bytes == 1 << 26


async def test_the_sdk_writes_a_batch_above_the_limit_in_one_revision(
    open_server: Served, fresh_scope: str
) -> None:
    """1.6 MB of entries: one JSON request would be a 413 at the default 1 MiB write limit, so
    the SDK sends them as JSON lines, still one call and one revision (api-notes)."""
    batch = [
        RememberMemoryRequest(text=f"entry {i} " + "z" * 5000, idempotency_key="big-1")
        for i in range(320)
    ]
    async with PowerContextClient(open_server.url) as client:
        memory = client.memory.for_scope(fresh_scope)
        written = await memory.remember_many(batch)
        assert [e.text for e in written.entries] == [r.text for r in batch]
        head = await memory.head()
        assert head is not None and written.memory_ref == head and head.revision == 1
        # The same call again (as after a lost answer): answered, nothing rewritten.
        again = await memory.remember_many(batch)
        assert again == written and await memory.head() == head
    with SyncPowerContextClient(open_server.url) as sync_client:
        scoped = sync_client.memory.for_scope(fresh_scope)
        many = [RememberMemoryRequest(text=f"small {i}", expected_revision=1) for i in range(260)]
        sync_written = scoped.remember_many(many)  # by count, not size: the line route
        assert sync_written.memory_ref.revision == 2 and len(sync_written.entries) == 260
        with pytest.raises(RevisionConflictError):  # the whole batch checked against it
            scoped.remember_many(many)
        assert scoped.head() == sync_written.memory_ref


def test_entry_count_is_bounded_before_entries_are_validated(
    open_server: Served, fresh_scope: str
) -> None:
    """1 MiB of tiny entries is ~70k entries (seconds of validation holding the GIL): the
    wire takes at most MAX_WIRE_BATCH_ENTRIES per request."""
    from powercontext.server.schemas import MAX_WIRE_BATCH_ENTRIES

    entries = [{"text": "x"}] * (MAX_WIRE_BATCH_ENTRIES + 1)
    with open_server.client() as client:
        refused = client.post(
            "/v1/memory/remember", json={"scope_id": fresh_scope, "entries": entries}
        )
        assert refused.status_code == 422, refused.text
        assert str(MAX_WIRE_BATCH_ENTRIES) in refused.text
        accepted = client.post(
            "/v1/memory/remember",
            json={"scope_id": fresh_scope, "entries": entries[:MAX_WIRE_BATCH_ENTRIES]},
        )
        assert accepted.status_code == 200, accepted.text


def test_the_default_general_limit_holds_the_largest_default_batch_search() -> None:
    """Every buffered body is bounded by a few MiB (parsing holds the event loop), yet the
    largest batch search the default settings accept still fits."""
    from powercontext.config import RuntimeConfig
    from powercontext.memory.values import MAX_QUERY_BYTES
    from powercontext.server.gate import body_limit

    http = HttpConfig()
    assert http.max_body_bytes <= 4 * 1024 * 1024
    searches = [{"query": "q" * MAX_QUERY_BYTES, "limit": 10}] * RuntimeConfig().max_batch_queries
    body = json.dumps({"scope_id": "s", "searches": searches}).encode()
    assert len(body) < http.max_body_bytes // 2
    limit = body_limit(
        "/v1/memory/search/batch",
        max_body_bytes=http.max_body_bytes,
        max_write_body_bytes=http.max_write_body_bytes,
    )
    assert limit.max_bytes == http.max_body_bytes
