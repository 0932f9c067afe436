"""SQLite specifics: file set-up, migrations, URL dispatch, error mapping, the event loop."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from powercontext.memory.errors import ConfigurationError, MemoryValidationError, StorageError
from powercontext.memory.ports import (
    CommitRequest,
    FtsQuery,
    MemoryStore,
    NewVersion,
    PlannedChange,
    VersionPage,
)
from powercontext.storage import open_store
from powercontext.storage.sqlite import SCHEMA_VERSION, ConnectionOptions, SqliteMemoryStore


def _add(text: str, n: int) -> PlannedChange:
    return PlannedChange(
        op="add",
        new=NewVersion(
            entry_id=f"e{n}",
            entry_version_id=f"v{n}",
            version=1,
            kind="fact",
            text=text,
            metadata={},
            index_tokens=text.lower(),
        ),
    )


def _batch(count: int, start: int = 0) -> list[PlannedChange]:
    return [_add(f"entry {i} with some words", i) for i in range(start, start + count)]


async def test_a_new_file_is_created_with_parents_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "memory.sqlite3"
    store = await SqliteMemoryStore.open(path)
    await store.commit(CommitRequest("s", None, _batch(3)))
    await store.close()
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        versions = [row[0] for row in raw.execute("SELECT version FROM schema_migrations")]
        assert versions == list(range(1, SCHEMA_VERSION + 1))
        assert raw.execute("SELECT count(*) FROM entry_versions").fetchone()[0] == 3
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        raw.close()


async def test_opening_waits_while_another_process_holds_a_new_file(tmp_path: Path) -> None:
    # The switch to WAL is refused at once (SQLITE_BUSY, no busy handler) while another
    # connection is writing the file in its first journal mode: what the first of two
    # processes opening a fresh file together does while it switches it to WAL.
    path = tmp_path / "memory.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("PRAGMA user_version = 7")
    release = threading.Timer(0.3, holder.rollback)
    release.start()
    try:
        store = await SqliteMemoryStore.open(path)
    finally:
        release.join()
        holder.close()
    try:
        assert await store.head("s") is None
    finally:
        await store.close()


async def test_reopening_applies_no_migration_twice(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    for _ in range(3):
        store = await SqliteMemoryStore.open(path)
        await store.close()
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION
    finally:
        raw.close()


async def test_a_database_from_a_newer_schema_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    await (await SqliteMemoryStore.open(path)).close()
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO schema_migrations VALUES (?, 'later')", (SCHEMA_VERSION + 5,))
    raw.commit()
    raw.close()
    with pytest.raises(StorageError, match="newer"):
        await SqliteMemoryStore.open(path)


@pytest.mark.parametrize("content", [b"this is not a database" * 100, b"\x00" * 8192])
async def test_a_file_that_is_not_a_database_gives_a_storage_error(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "garbage.sqlite3"
    path.write_bytes(content)
    with pytest.raises(StorageError):
        await SqliteMemoryStore.open(path)


async def test_a_directory_as_the_path_gives_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError):
        await SqliteMemoryStore.open(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError):
        await SqliteMemoryStore.open(blocker / "below" / "memory.sqlite3")


async def test_a_full_database_gives_a_storage_error_and_no_partial_write(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = await SqliteMemoryStore.open(path)
    await store.commit(CommitRequest("s", None, _batch(5)))
    await store.close()
    raw = sqlite3.connect(path)
    pages = raw.execute("PRAGMA page_count").fetchone()[0]
    raw.close()
    # max_page_count makes SQLite report SQLITE_FULL exactly as a full disk would.
    limited = await SqliteMemoryStore.open(
        path, options=ConnectionOptions(pragmas={"max_page_count": pages + 4})
    )
    try:
        with pytest.raises(StorageError, match="full"):
            await limited.commit(CommitRequest("s", 1, _batch(5_000, start=5)))
        assert await limited.head("s") == 1
        assert len(await limited.list_versions(VersionPage("s", 1, after_key=None, limit=100))) == 5
        assert await limited.fts_candidates(FtsQuery("s", 1, ["entry"], limit=100)) != []
    finally:
        await limited.close()
    reopened = await SqliteMemoryStore.open(path)
    try:
        assert await reopened.head("s") == 1
        result = await reopened.commit(CommitRequest("s", 1, _batch(5_000, start=5)))
        assert result.revision == 2 and len(result.keys) == 5_000
    finally:
        await reopened.close()


async def test_a_read_only_database_gives_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = await SqliteMemoryStore.open(path)
    await store.commit(CommitRequest("s", None, _batch(2)))
    await store.close()
    frozen = await SqliteMemoryStore.open(
        path, options=ConnectionOptions(pragmas={"query_only": "ON"})
    )
    try:
        with pytest.raises(StorageError, match="read-only"):
            await frozen.commit(CommitRequest("s", 1, _batch(1, start=10)))
        assert await frozen.head("s") == 1
    finally:
        await frozen.close()


async def test_unsafe_pragmas_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StorageError):
        await SqliteMemoryStore.open(
            tmp_path / "x.db", options=ConnectionOptions(pragmas={"x; DROP TABLE y": 1})
        )


@pytest.mark.parametrize("target", ["file", ":memory:"])
async def test_a_closed_store_refuses_work_with_a_storage_error(
    tmp_path: Path, target: str
) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "m.db" if target == "file" else target)
    await store.commit(CommitRequest("s", None, _batch(1)))
    await store.close()
    await store.close()  # closing twice is harmless
    with pytest.raises(StorageError, match="closed"):
        await store.head("s")
    with pytest.raises(StorageError, match="closed"):
        await store.commit(CommitRequest("s", 1, _batch(1, start=1)))


async def test_open_store_dispatches_on_the_url(tmp_path: Path) -> None:
    path = tmp_path / "via-url" / "memory.sqlite3"
    store = await open_store(f"sqlite:///{path}")
    assert isinstance(store, SqliteMemoryStore) and Path(store.target) == path
    await store.commit(CommitRequest("s", None, _batch(1)))
    await store.close()
    assert path.exists()
    memory = await open_store("sqlite:///:memory:")
    assert isinstance(memory, SqliteMemoryStore) and memory.target == ":memory:"
    await memory.close()


@pytest.mark.parametrize("url", ["mysql://db/x", "sqlite://relative.db", "sqlite:///", "nonsense"])
async def test_open_store_rejects_unknown_urls(url: str) -> None:
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_DATABASE_URL"):
        await open_store(url)


async def test_open_store_names_the_postgres_extra_when_the_backend_is_missing() -> None:
    try:
        from powercontext.storage.postgres import PostgresMemoryStore  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("the PostgreSQL backend is installed; its own tests cover it")
    with pytest.raises(ConfigurationError, match="postgres"):
        await open_store("postgresql://127.0.0.1:1/none")


async def test_a_big_commit_never_blocks_the_event_loop(tmp_path: Path) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "memory.sqlite3")
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    # A full collection of the test session's heap stops every thread for a few hundred ms
    # (seen once in CI): a pause of the process, not of the event loop by the store.
    gc.collect()
    gc.disable()
    try:
        tick = asyncio.create_task(ticker())
        started = time.perf_counter()
        await store.commit(CommitRequest("s", None, _batch(10_000)))
        elapsed = time.perf_counter() - started
        done.set()
        await tick
    finally:
        gc.enable()
    await store.close()
    assert len(gaps) > 5
    assert max(gaps) < max(0.25, elapsed / 3), (max(gaps), elapsed)


async def _concurrent_readers_see_whole_revisions(store: MemoryStore) -> None:
    await store.commit(CommitRequest("s", None, _batch(20)))

    async def writer() -> None:
        for revision in range(1, 11):
            await store.commit(CommitRequest("s", revision, _batch(20, start=20 * revision)))
            await asyncio.sleep(0)

    async def reader() -> None:
        for _ in range(15):
            head = await store.head("s")
            assert head is not None
            page = await store.list_versions(VersionPage("s", head, after_key=None, limit=5_000))
            assert len(page) == 20 * head
            found = await store.fts_candidates(FtsQuery("s", head, ["entry"], limit=5_000))
            assert len(found) == 20 * head

    await asyncio.gather(writer(), *(reader() for _ in range(4)))
    assert await store.head("s") == 11


@pytest.mark.parametrize("target", ["file", ":memory:"])
async def test_concurrent_reads_and_writes_see_whole_revisions(tmp_path: Path, target: str) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "m.db" if target == "file" else target)
    try:
        await _concurrent_readers_see_whole_revisions(store)
    finally:
        await store.close()


async def test_integers_beyond_64_bits_are_a_validation_error() -> None:
    store = await SqliteMemoryStore.open(":memory:")
    try:
        with pytest.raises(MemoryValidationError):
            await store.fetch_versions("s", [2**70])
        with pytest.raises(MemoryValidationError):
            await store.changes("s", 2**64, limit=10)
    finally:
        await store.close()
