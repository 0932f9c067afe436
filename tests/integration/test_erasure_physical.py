"""An erased entry's bytes leave the SQLite file and its WAL, not only the query results,
and the in-memory caches of every process sharing the file.

The control half of each test shows the bytes are on disk before `forget`, so the check after
it can fail: without secure_delete, the FTS5 merge or the WAL truncation, they stay.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.erasure import ForgetScopeRequest
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.schema import MIGRATIONS

SECRET = "xylophonist-qwertyuiop-7741"
METADATA = "metadatum-plumbus-9921"


def _on_disk(directory: Path) -> bytes:
    """Every byte of the database and its side files (-wal, -shm)."""
    return b"".join(path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file())


async def test_forget_leaves_no_byte_of_the_text_in_the_file_or_wal(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    store = await SqliteMemoryStore.open(directory / "memory.sqlite3")
    try:
        memory = MemoryService(store).for_scope("s")
        written = await memory.remember(
            RememberMemoryRequest(text=f"my {SECRET} words", metadata={"tag": METADATA})
        )
        await memory.retire(RetireMemoryRequest(citation=written.entries[0].citation))
        await memory.remember_many(
            [RememberMemoryRequest(text=f"filler entry {i} " * 20) for i in range(200)]
        )
        assert SECRET.encode() in _on_disk(directory)  # the control: it is on disk now
        await memory.forget(written.entries[0].entry_id)
        data = _on_disk(directory)
        assert SECRET.encode() not in data
        assert METADATA.encode() not in data
        # FTS5 keeps tokens, not text: the rare token must be gone too.
        assert b"qwertyuiop" not in data
        assert b"filler" in data  # the rest of the scope is still there
    finally:
        await store.close()
    assert SECRET.encode() not in _on_disk(directory)


async def test_forget_scope_leaves_no_byte_of_any_entry(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    store = await SqliteMemoryStore.open(directory / "memory.sqlite3")
    try:
        memory = MemoryService(store).for_scope("s")
        await memory.remember_many(
            [RememberMemoryRequest(text=f"{SECRET} entry {i}") for i in range(50)]
        )
        assert SECRET.encode() in _on_disk(directory)
        await memory.forget_scope(ForgetScopeRequest())
        assert b"xylophonist" not in _on_disk(directory)
    finally:
        await store.close()


async def test_another_process_drops_its_cached_tokens_and_vectors(tmp_path: Path) -> None:
    """Two stores on one file stand for two server processes: the erasure one of them makes
    must empty the other's in-memory BM25 postings and vector matrix too."""
    path = tmp_path / "db" / "memory.sqlite3"
    embedder = HashingEmbedder()
    config = SearchConfig(min_similarity=-1.0)
    async with (
        await SqliteMemoryStore.open(path) as first,
        await SqliteMemoryStore.open(path) as second,
    ):
        writer = MemoryService(first, embedder=embedder, config=config).for_scope("s")
        reader = MemoryService(second, embedder=embedder, config=config).for_scope("s")
        written = await writer.remember(RememberMemoryRequest(text=f"my {SECRET} words"))
        await writer.remember(RememberMemoryRequest(text="other words entirely"))
        for mode in ("fts", "vector"):
            page = await reader.search(SearchMemoryRequest(query=SECRET, mode=mode, revision=2))
            assert SECRET in page.hits[0].text  # cached in the reader's process now
        erased_key = written.entries[0]
        stored = await second.get_version("s", erased_key.entry_version_id)
        assert stored is not None
        await writer.forget(erased_key.entry_id)
        for mode in ("fts", "vector"):
            page = await reader.search(SearchMemoryRequest(query=SECRET, mode=mode, revision=2))
            assert all(SECRET not in hit.text for hit in page.hits), mode
        # Results alone would not show it (a hit whose row is gone is dropped): the caches
        # themselves must no longer hold the erased words and vector.
        terms = second._terms.get("s")
        assert not any("qwertyuiop" in name for name in terms.names)
        matrix = second._vectors.get("s", embedder.profile.profile_id)
        assert stored.key not in set(matrix.keys[: matrix.size].tolist())
        assert await second.missing_vector_count("s", 2, embedder.profile.profile_id) == 0


async def test_migration_4_keeps_the_change_log(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)")
    for version, statements in enumerate(MIGRATIONS[:3], start=1):
        for statement in statements:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (?, 'then')", (version,))
    conn.execute("INSERT INTO scopes (scope_id, head_revision, created_at) VALUES ('s', 1, 't')")
    conn.execute("INSERT INTO revisions VALUES ('s', 1, '2026-01-01T00:00:00+00:00', 0, 1)")
    conn.execute(
        "INSERT INTO changes VALUES ('s', 1, 1, 'retire', 'e', 'v', NULL, 'why', "
        "'2026-01-01T00:00:00+00:00')"
    )
    conn.close()
    async with await SqliteMemoryStore.open(path) as store:
        (change,) = await store.changes("s", 0, limit=10)
        assert (change.op, change.reason, change.actor) == ("retire", "why", None)
