"""The SDK (async and sync) against real servers: same models as the runtime, typed errors."""

from __future__ import annotations

import re
import socket
import sqlite3

import httpx
import pytest

from powercontext.client import (
    ApiError,
    ApiIdempotencyConflictError,
    ApiInferenceUnavailableError,
    ApiStorageError,
    ClientSettings,
    ConnectionFailedError,
    ForbiddenError,
    PowerContextClient,
    ServerError,
    SyncPowerContextClient,
    UnauthorizedError,
)
from powercontext.client.transport import SECONDS_PER_ENTRY, scaled_timeout
from powercontext.memory import (
    CapabilityNotSupportedError,
    InferenceTimeoutError,
    InvalidInferenceOutputError,
    MemoryEntry,
    MemoryHit,
    MemorySearchPage,
    MemoryValidationError,
    NotFoundError,
    PayloadTooLargeError,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    RevisionConflictError,
    SearchMemoryRequest,
)
from powercontext.memory.models import MemoryCitation, MemoryRef
from tests.http.conftest import BATCH_LIMIT, KEY_A, Served


def _fast(url: str, **kwargs: object) -> ClientSettings:
    return ClientSettings(server_url=url, retry_backoff=0.01, **kwargs)  # type: ignore[arg-type]


async def test_async_client_mirrors_the_runtime(open_server: Served, fresh_scope: str) -> None:
    async with PowerContextClient(settings=_fast(open_server.url)) as client:
        assert (await client.health()).status == "ok"
        assert (await client.ready()).ready
        memory = client.memory.for_scope(fresh_scope)
        assert await memory.head() is None

        first = await memory.remember(RememberMemoryRequest(kind="fact", text="Ana likes tea."))
        assert first.memory_ref == MemoryRef(scope_id=fresh_scope, revision=1)
        batch = await memory.remember_many(
            [
                RememberMemoryRequest(text=f"Ana visited city {i}", metadata={"i": i})
                for i in range(3)
            ]
        )
        assert batch.memory_ref.revision == 2 and len(batch.entries) == 3

        page = await memory.search(SearchMemoryRequest(query="Ana", limit=3, mode="fts"))
        assert isinstance(page, MemorySearchPage) and page.rerank is None
        assert page.memory_ref == MemoryRef(scope_id=fresh_scope, revision=2)
        assert len(page.hits) == 3 and all(isinstance(h, MemoryHit) for h in page.hits)
        for hit in page.hits:
            entry = await memory.get(hit.citation)
            assert isinstance(entry, MemoryEntry)
            assert (entry.entry_version_id, entry.text) == (hit.entry_version_id, hit.text)

        citation = first.citations[0]
        revised = await memory.revise(
            ReviseMemoryRequest(citation=citation, text="Ana likes coffee.")
        )
        new_citation = revised.citations[0]
        retired = await memory.retire(RetireMemoryRequest(citation=new_citation, reason="moved"))
        assert retired.entries == () and retired.memory_ref.revision == 4
        back = await memory.reactivate(ReactivateMemoryRequest(citation=new_citation))
        assert back.entries[0].text == "Ana likes coffee."

        listed = await memory.list(limit=2)
        assert len(listed.entries) == 2 and listed.next_cursor is not None
        rest = await memory.list(cursor=listed.next_cursor, limit=10)
        assert len(listed.entries) + len(rest.entries) == 4

        changes = await memory.changes(since_revision=2)
        assert [c.op for c in changes.changes] == ["revise", "retire", "reactivate"]
        assert await memory.head() == MemoryRef(scope_id=fresh_scope, revision=5)

        unknown = MemoryCitation(
            memory_ref=MemoryRef(scope_id=fresh_scope, revision=1),
            entry_id="0" * 32,
            entry_version_id="0" * 32,
        )
        assert await memory.get(unknown) is None


def test_sync_client_mirrors_the_runtime(open_server: Served, fresh_scope: str) -> None:
    with SyncPowerContextClient(settings=_fast(open_server.url)) as client:
        memory = client.memory.for_scope(fresh_scope)
        written = memory.remember(RememberMemoryRequest(text="The build runs nightly."))
        page = memory.search(SearchMemoryRequest(query="build"))
        assert [h.entry_version_id for h in page.hits] == [written.entries[0].entry_version_id]
        assert memory.get(page.hits[0].citation) == written.entries[0]
        assert memory.changes().changes[0].op == "add"
        assert client.health().version


async def test_typed_errors(open_server: Served, bare_server: Served, fresh_scope: str) -> None:
    async with PowerContextClient(settings=_fast(open_server.url, max_retries=0)) as client:
        memory = client.memory.for_scope(fresh_scope)
        await memory.remember(RememberMemoryRequest(text="a fact"))
        with pytest.raises(RevisionConflictError) as conflict:
            await memory.remember(RememberMemoryRequest(text="b", expected_revision=0))
        assert (conflict.value.expected, conflict.value.actual) == (0, 1)
        assert isinstance(conflict.value, ApiError) and conflict.value.status_code == 409
        assert conflict.value.request_id

        for marker, cls in (
            ("raise-timeout", InferenceTimeoutError),
            ("raise-unavailable", ApiInferenceUnavailableError),
            ("raise-invalid", InvalidInferenceOutputError),
            ("raise-crash", ServerError),
        ):
            with pytest.raises(cls):
                await memory.search(SearchMemoryRequest(query=f"fact {marker}"))

        missing = MemoryCitation(
            memory_ref=MemoryRef(scope_id=fresh_scope, revision=1),
            entry_id="x",
            entry_version_id="y",
        )
        with pytest.raises(NotFoundError):
            await memory.retire(RetireMemoryRequest(citation=missing))
        with pytest.raises(MemoryValidationError):
            await memory.list(limit=5000)

    with SyncPowerContextClient(settings=_fast(bare_server.url)) as bare:
        scoped = bare.memory.for_scope(fresh_scope)
        scoped.remember(RememberMemoryRequest(text="text"))
        with pytest.raises(CapabilityNotSupportedError):
            scoped.search(SearchMemoryRequest(query="text", mode="vector"))
        too_many = [RememberMemoryRequest(text=f"e{i}") for i in range(BATCH_LIMIT + 1)]
        with pytest.raises(PayloadTooLargeError):
            scoped.remember_many(too_many)


def test_auth_errors_and_settings_from_the_environment(
    auth_server: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SyncPowerContextClient(auth_server.url) as anonymous, pytest.raises(UnauthorizedError):
        anonymous.memory.for_scope("scope-a").head()

    monkeypatch.setenv("POWERCONTEXT_CLIENT_SERVER_URL", auth_server.url)
    monkeypatch.setenv("POWERCONTEXT_CLIENT_API_KEY", KEY_A)
    monkeypatch.setenv("POWERCONTEXT_CLIENT_TIMEOUT", "7.5")
    assert ClientSettings().timeout == 7.5
    with SyncPowerContextClient() as client:
        assert client.server_url == auth_server.url
        client.memory.for_scope("scope-a").head()
        with pytest.raises(ForbiddenError) as denied:
            client.memory.for_scope("scope-b").head()
        assert denied.value.status_code == 403


async def test_idempotent_calls_retry_on_503(open_server: Served, fresh_scope: str) -> None:
    assert open_server.reranker is not None
    async with PowerContextClient(settings=_fast(open_server.url, max_retries=3)) as client:
        memory = client.memory.for_scope(fresh_scope)
        await memory.remember(RememberMemoryRequest(text="a flaky fact"))
        page = await memory.search(SearchMemoryRequest(query="fact flaky-ok1"))
        assert len(page.hits) == 1
        assert open_server.reranker.flaky_attempts("ok1") == 3  # two 503s, then success

    async with PowerContextClient(settings=_fast(open_server.url, max_retries=1)) as client:
        with pytest.raises(ApiInferenceUnavailableError):
            await client.memory.for_scope(fresh_scope).search(
                SearchMemoryRequest(query="fact flaky-no2")
            )
        assert open_server.reranker.flaky_attempts("no2") == 2  # bounded: one retry


def _count_503_writes(served: Served) -> float:
    text = httpx.get(f"{served.url}/metrics").text
    match = re.search(
        r'powercontext_http_requests_total\{method="POST",route="/v1/memory/remember",'
        r'status="503"\} ([0-9.]+)',
        text,
    )
    return float(match.group(1)) if match else 0.0


def test_writes_carry_a_key_so_they_are_retried(bare_server: Served, fresh_scope: str) -> None:
    """The SDK keys every write, so a 503 is retried like a read (bounded)."""
    before = _count_503_writes(bare_server)
    blocker = sqlite3.connect(bare_server.db_path, isolation_level=None, timeout=0.1)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        with (
            SyncPowerContextClient(settings=_fast(bare_server.url, max_retries=3)) as client,
            pytest.raises(ApiStorageError),
        ):
            client.memory.for_scope(fresh_scope).remember(RememberMemoryRequest(text="w"))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert _count_503_writes(bare_server) == before + 4  # the first try and three retries


async def test_a_retried_write_returns_the_original_result(
    open_server: Served, fresh_scope: str
) -> None:
    async with PowerContextClient(settings=_fast(open_server.url)) as client:
        memory = client.memory.for_scope(fresh_scope)
        batch = [RememberMemoryRequest(text=f"note {i}", idempotency_key="b-1") for i in range(3)]
        first = await memory.remember_many(batch)
        assert await memory.remember_many(batch) == first
        assert await memory.head() == first.memory_ref
        with pytest.raises(ApiIdempotencyConflictError) as clash:
            await memory.remember_many([RememberMemoryRequest(text="x", idempotency_key="b-1")])
        assert clash.value.status_code == 409 and clash.value.code == "idempotency_conflict"
        # Without an explicit key the SDK sends a fresh one: two calls are two writes.
        one = await memory.remember(RememberMemoryRequest(text="same text"))
        two = await memory.remember(RememberMemoryRequest(text="same text"))
        assert two.memory_ref.revision == one.memory_ref.revision + 1


async def test_get_entry_by_id_and_history(open_server: Served, fresh_scope: str) -> None:
    async with PowerContextClient(settings=_fast(open_server.url)) as client:
        memory = client.memory.for_scope(fresh_scope)
        first = (await memory.remember(RememberMemoryRequest(text="v one"))).entries[0]
        await memory.revise(ReviseMemoryRequest(citation=first.citation, text="v two"))
        assert (await memory.get_entry(first.entry_id)).text == "v two"
        then = await memory.get_entry(first.entry_id, revision=1)
        assert (then.citation, then.text) == (first.citation, "v one")
        assert not then.active  # `active` is as of the head: it was revised since
        history = await memory.history(first.entry_id, revision=1)
        assert [c.op for c in history.changes] == ["add"]
        assert history.active_version == then
        with pytest.raises(NotFoundError):
            await memory.get_entry("no-such-entry")
    with SyncPowerContextClient(settings=_fast(open_server.url)) as sync:
        scoped = sync.memory.for_scope(fresh_scope)
        assert [c.op for c in scoped.history(first.entry_id).changes] == ["revise", "add"]
        assert scoped.get_entry(first.entry_id, revision=1) == then


def test_a_batch_timeout_grows_with_its_size() -> None:
    base = httpx.Timeout(10.0, connect=2.0)
    assert scaled_timeout(base, 1) == base
    big = scaled_timeout(base, 50_001)
    assert big.connect == 2.0
    assert big.read == big.write == pytest.approx(10.0 + 50_000 * SECONDS_PER_ENTRY)


def test_unreachable_server() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        with (
            SyncPowerContextClient(
                settings=_fast(f"http://127.0.0.1:{port}", max_retries=1)
            ) as client,
            pytest.raises(ConnectionFailedError) as failed,
        ):
            client.health()
    # Where it tried and what to check, not only the exception's type.
    message = str(failed.value)
    assert f"at http://127.0.0.1:{port}: ConnectError" in message
    assert "powercontext server run" in message
    assert "POWERCONTEXT_CLIENT_SERVER_URL" in message
