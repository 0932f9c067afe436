"""`forget` leaves no byte of the erased text in a scope of thousands of entries either: not
in the database, its -wal and -shm files, nor the postings and vector snapshots in
`<db>.cache`, whether the entry was written first or last, revised, in a thread whose
neighbours indexed its words, or in a whole scope erased among others.

Every marker is a random-looking word, looked for whole and as any 10-letter piece of it:
FTS5 stores a term as the suffix it does not share with the previous one. The control half
shows each is on disk before the forget, so the check after it can fail (it does without the
FTS5 merge, the WAL truncation or secure_delete).
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.erasure import ForgetScopeRequest
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import (
    RememberMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore, term_snapshots, vector_snapshots
from powercontext.storage.sqlite.ann import IndexOptions
from powercontext.storage.sqlite.connections import ConnectionOptions

ENTRIES = 5_000
EARLY = "xqvjzkwpyfqmzxjb"  # the scope's first entry, revised before the forget
THREAD = "zjqxvwkpmyqzjxfb"  # in a thread: its neighbours' tokens hold it too
LATE = "qzxwjvkyfmpqxzjw"  # the scope's last entry, in its metadata only
OTHER = "wkzqjxvmfyqpzjkx"  # every entry of another scope, forgotten whole


def _found(data: bytes, marker: str) -> list[bytes]:
    """The 10-letter pieces of `marker` in `data`."""
    pieces = (marker[i : i + 10].encode() for i in range(len(marker) - 9))
    return [piece for piece in pieces if piece in data]


def _on_disk(directory: Path) -> bytes:
    """Every byte of the database, its side files and its snapshot folder."""
    return b"".join(path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file())


def _filler(rng: random.Random, vocabulary: list[str], i: int) -> RememberMemoryRequest:
    words = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(8, 30)))
    return RememberMemoryRequest(text=f"{words} note {i}")


async def test_forget_in_a_scope_of_thousands_leaves_no_piece_of_the_text(
    tmp_path: Path,
) -> None:
    rng = random.Random(7)
    syllables = ["ba", "ke", "lo", "mi", "nu", "ra", "se", "ti", "vo", "da", "fe", "go"]
    vocabulary = ["".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(5_000)]
    directory = tmp_path / "db"
    # Snapshots from 1,000 rows, so this scope has postings and vector snapshots on disk.
    store = await SqliteMemoryStore.open(
        directory / "memory.sqlite3", index=IndexOptions(snapshot_min_rows=1_000)
    )
    config = SearchConfig(index=IndexTextConfig(context_before=2, context_after=2))
    service = MemoryService(store, embedder=HashingEmbedder(), config=config)
    try:
        memory, other = service.for_scope("s"), service.for_scope("t")
        in_thread = None
        first = await memory.remember(
            RememberMemoryRequest(text=f"the {EARLY} plan", metadata={"tag": EARLY})
        )
        early = first.entries[0]
        for start in range(1, ENTRIES - 1, 1_000):
            batch = [_filler(rng, vocabulary, i) for i in range(start, start + 1_000)]
            if start == 2_001:
                threaded = [
                    RememberMemoryRequest(text=f"{word} talk", thread="chat")
                    for word in ("before", f"about {THREAD}", "after", "later")
                ]
                batch[500:500] = threaded
            written = await memory.remember_many(batch)
            if start == 2_001:
                in_thread = written.entries[501]
        late = await memory.remember(
            RememberMemoryRequest(text="the last one", metadata={"tag": LATE})
        )
        await other.remember_many(
            [RememberMemoryRequest(text=f"{OTHER} {i}") for i in range(1_000)]
        )
        await memory.revise(ReviseMemoryRequest(citation=early.citation, text="the new plan"))
        for scope in (memory, other):
            for mode in ("fts", "vector"):  # fills the caches and writes their snapshots
                await scope.search(SearchMemoryRequest(query="ba ke", mode=mode))
        before = _on_disk(directory)
        assert list((directory / "memory.sqlite3.cache").glob("terms-*"))
        for marker in (EARLY, THREAD, LATE, OTHER):
            assert marker.encode() in before, marker  # the control

        assert in_thread is not None
        for entry in (early, in_thread, late.entries[0]):
            await memory.forget(entry.entry_id)
        await other.forget_scope(ForgetScopeRequest())

        data = _on_disk(directory)
        for marker in (EARLY, THREAD, LATE, OTHER):
            assert _found(data, marker) == [], marker
        assert b"note 4000" in data  # the rest of the scope is still there
        page = await memory.search(SearchMemoryRequest(query="talk", mode="fts"))
        assert len(page.hits) == 3
    finally:
        await store.close()


@pytest.mark.parametrize("mode", ["fts", "vector"])
async def test_a_search_filling_its_cache_during_forget_writes_nothing_erased(
    tmp_path: Path, mode: str
) -> None:
    """A refresh of the postings (fts) or of the vector matrix that read the scope before the
    erasure committed used to write its snapshot, erased token or vector included, after the
    erasure had deleted the snapshot files."""
    directory = tmp_path / "db"
    path = directory / "memory.sqlite3"
    store = await SqliteMemoryStore.open(path, index=IndexOptions(snapshot_min_rows=100))
    snapshots: Any = term_snapshots if mode == "fts" else vector_snapshots
    reached, release = threading.Event(), threading.Event()
    save = snapshots.save

    def held_save(cache: object) -> None:
        reached.set()
        release.wait(10)
        save(cache)

    try:
        memory = MemoryService(store, embedder=HashingEmbedder()).for_scope("s")
        written = await memory.remember(RememberMemoryRequest(text=f"my {EARLY} words"))
        await memory.remember_many([RememberMemoryRequest(text=f"filler {i}") for i in range(300)])
        entry = written.entries[0]
        with sqlite3.connect(path) as raw:
            (vector,) = raw.execute(
                "SELECT v.vector FROM entry_vectors v JOIN entry_versions e ON e.key = v.key "
                "WHERE e.entry_id = ?",
                (entry.entry_id,),
            ).fetchone()
        snapshots.save = held_save
        query = SearchMemoryRequest(query="filler", mode=mode)  # type: ignore[arg-type]
        search = asyncio.create_task(memory.search(query))
        assert await asyncio.to_thread(reached.wait, 10)  # it read the entry, not saved yet
        forget = asyncio.create_task(memory.forget(entry.entry_id))
        await asyncio.sleep(0.2)
        release.set()
        await asyncio.gather(search, forget)
        left = _on_disk(directory)
        assert _found(left, EARLY) == []
        assert bytes(vector) not in left
    finally:
        snapshots.save = save
        release.set()
        await store.close()


async def test_a_reader_holding_the_wal_during_forget_delays_its_truncation_only(
    tmp_path: Path,
) -> None:
    """Another process's reader keeps the erasure's checkpoint from truncating the WAL. Once
    a checkpoint completes, the writer restarts the log from its first frame; the old frames
    past the ones written since, erased text included, used to stay in the file's tail."""
    path = tmp_path / "db" / "memory.sqlite3"
    store = await SqliteMemoryStore.open(path, options=ConnectionOptions(busy_timeout_seconds=0.2))
    other = None
    try:
        memory = MemoryService(store).for_scope("s")
        written = await memory.remember(RememberMemoryRequest(text=f"my {EARLY} words"))
        await memory.remember_many([RememberMemoryRequest(text=f"filler {i}") for i in range(300)])
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN")
        other.execute("SELECT count(*) FROM entry_versions").fetchone()
        await memory.forget(written.entries[0].entry_id)
        wal = path.with_name(path.name + "-wal")
        assert _found(wal.read_bytes(), EARLY)  # the control: the reader's snapshot needs it
        other.execute("COMMIT")
        other.execute("PRAGMA wal_checkpoint(PASSIVE)")  # as any other process may
        await memory.remember(RememberMemoryRequest(text="one more"))  # restarts the log
        assert _found(_on_disk(path.parent), EARLY) == []
    finally:
        if other is not None:
            other.close()
        await store.close()
