"""Short reads (the head, a page of rows, a small scope's cached full-text search) run on the
event loop when they need not wait."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from powercontext.memory.errors import StorageError
from powercontext.memory.ports import CommitRequest, FtsQuery, PlannedChange
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite import store as sqlite_store
from powercontext.storage.sqlite.connections import WouldWait
from tests.integration.planned import planned_adds


async def test_a_point_read_runs_on_the_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "m.db")
    result = await store.commit(CommitRequest("s", None, planned_adds(["entry 1", "entry 2"])))

    async def no_thread(*args: object, **kwargs: object) -> object:
        raise AssertionError("a point read took a worker thread")

    monkeypatch.setattr(asyncio, "to_thread", no_thread)
    assert await store.head("s") == 1
    rows = await store.fetch_versions("s", result.keys)
    assert [rows[k].text for k in result.keys] == ["entry 1", "entry 2"]
    monkeypatch.undo()
    await store.close()


async def test_a_point_read_whose_connection_is_in_use_takes_a_worker_thread(
    tmp_path: Path,
) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "m.db")
    await store.commit(CommitRequest("s", None, planned_adds(["entry 1"])))
    pool = store._pool
    with pool._now_lock:  # another event loop's point read, say
        with pytest.raises(WouldWait):
            pool.read_now(lambda conn: conn.execute("SELECT 1").fetchone(), "probing")
        assert await store.head("s") == 1
    await store.close()


async def test_a_point_read_on_a_locked_database_waits_in_a_worker_thread_not_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "m.db")
    await store.commit(CommitRequest("s", None, planned_adds(["entry 1"])))
    pool = store._pool
    read_on = pool._read_on
    locked = threading.Event()
    locked.set()

    def busy_on_the_loops_connection(conn: sqlite3.Connection, work: Any, doing: str) -> Any:
        if conn is pool._now and locked.is_set():
            busy = sqlite3.OperationalError("database is locked")
            busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
            raise StorageError("database is locked") from busy
        if conn is not pool._now:
            time.sleep(0.2)  # a pooled reader waiting out the lock, as busy_timeout does
        return read_on(conn, work, doing)

    monkeypatch.setattr(pool, "_read_on", busy_on_the_loops_connection)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    tick = asyncio.create_task(ticker())
    assert await store.head("s") == 1
    tick.cancel()
    assert ticks >= 5  # the loop went on while the read waited
    # any other storage failure is the caller's, as before
    locked.clear()
    monkeypatch.setattr(
        pool, "_read_on", lambda conn, work, doing: (_ for _ in ()).throw(StorageError("disk"))
    )
    with pytest.raises(StorageError, match="disk"):
        await store.head("s")
    monkeypatch.undo()
    await store.close()


class _Threads:
    """Counts this store's reads handed to worker threads (and still makes them). Its own
    reads only: counting every `asyncio.to_thread` of the process would count anything else
    the test run has going."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: SqliteMemoryStore) -> None:
        self.calls = 0
        pool = store._pool
        original = pool.read

        def counted(work: Any, doing: str) -> Any:
            self.calls += 1
            return original(work, doing)

        monkeypatch.setattr(pool, "read", counted)


async def test_a_small_scope_with_a_current_cache_is_searched_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "m.db")
    await store.commit(CommitRequest("s", None, planned_adds(["canoe trip", "lake day"])))
    threads = _Threads(monkeypatch, store)
    query = FtsQuery("s", 1, ["canoe"], limit=5)
    first = await store.fts_candidates(query)  # fills the cache: a thread
    assert threads.calls == 1
    again = await store.fts_candidates(query)
    assert threads.calls == 1  # current: no thread
    assert [(c.key, c.score, c.tokens) for c in again] == [
        (c.key, c.score, c.tokens) for c in first
    ]
    # a write moves the head: the cache catches up with the one new entry there and then
    await store.commit(CommitRequest("s", 1, planned_adds(["canoe race"], start=2)))
    threads.calls = 0
    found = await store.fts_candidates(FtsQuery("s", 2, ["canoe"], limit=5))
    assert threads.calls == 0
    assert len(found) == 2
    # more new entries than a search on the loop may read: the catch-up takes a thread
    monkeypatch.setattr(sqlite_store, "_CATCH_UP_ROWS", 2)
    await store.commit(CommitRequest("s", 2, planned_adds(["canoe a", "canoe b", "c"], start=3)))
    threads.calls = 0
    found = await store.fts_candidates(FtsQuery("s", 3, ["canoe"], limit=5))
    assert threads.calls == 1
    assert len(found) == 4
    # within the bound again: on the loop, and the same answer as a fresh store's
    await store.commit(CommitRequest("s", 3, planned_adds(["canoe d", "e"], start=6)))
    threads.calls = 0
    found = await store.fts_candidates(FtsQuery("s", 4, ["canoe"], limit=5))
    assert threads.calls == 0
    assert len(found) == 5
    # retiring more entries than the bound (no new version at all): a thread again
    retire = [PlannedChange(op="retire", previous_entry_version_id=f"v{i}") for i in (3, 4, 6)]
    await store.commit(CommitRequest("s", 4, retire))
    threads.calls = 0
    found = await store.fts_candidates(FtsQuery("s", 5, ["canoe"], limit=5))
    assert threads.calls == 1
    assert len(found) == 2
    fresh = await SqliteMemoryStore.open(tmp_path / "m.db")
    assert [(c.key, c.score, c.tokens) for c in found] == [
        (c.key, c.score, c.tokens)
        for c in await fresh.fts_candidates(FtsQuery("s", 5, ["canoe"], limit=5))
    ]
    await fresh.close()
    await store.close()


async def test_a_large_scope_or_a_busy_cache_is_searched_in_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "m.db")
    await store.commit(CommitRequest("s", None, planned_adds(["canoe trip", "lake day"])))
    query = FtsQuery("s", 1, ["canoe"], limit=5)
    expected = await store.fts_candidates(query)
    threads = _Threads(monkeypatch, store)
    monkeypatch.setattr(sqlite_store, "_SMALL_SCOPE_ROWS", 1)
    assert await store.fts_candidates(query) == expected
    assert threads.calls == 1
    monkeypatch.setattr(sqlite_store, "_SMALL_SCOPE_ROWS", 16_384)
    with store._terms.get("s").lock:  # another search holds the cache
        task = asyncio.create_task(store.fts_candidates(query))
        await asyncio.sleep(0.05)
        assert not task.done()  # it waits for the lock in a thread, not on the loop
    assert await task == expected
    assert threads.calls == 2
    await store.close()
