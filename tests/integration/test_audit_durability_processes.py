"""Separate OS processes on one database, as a user who keeps it for years runs them.

- Two processes write single entries while a third searches: no error (no "database is
  locked") reaches a caller, nothing acknowledged is lost, and search finds every write.
- A process killed (SIGKILL) in the middle of a `remember_many` of thousands of entries: on
  reopening, each batch is wholly there (one revision) or wholly absent, the store opens with
  no repair, and both channels agree with the entries: every active entry is found once the
  backfill has filled the vectors a kill left pending; nothing absent or erased is found.

Each on SQLite (a file) and on PostgreSQL (two runtimes on one database).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.search.analyze import analyze
from tests import pg_server

WRITES = 100
BATCH = 3000
TIMEOUT = 300
SCOPE = "durable"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'db' / 'memory.db'}"
    return await pg_server.database_url(tmp_path)


@asynccontextmanager
async def _memory(url: str) -> AsyncIterator[ScopedMemory]:
    settings = ServerSettings(
        database=DatabaseConfig(url=url), inference=InferenceConfig(embedding_model="hash")
    )
    async with open_runtime(settings) as runtime:
        yield runtime.memory.for_scope(SCOPE)


async def _write_singles(url: str, name: str, out: Any) -> None:
    acked, errors = [], []
    async with _memory(url) as memory:
        for i in range(WRITES):
            try:
                written = await memory.remember(RememberMemoryRequest(text=f"mark{name}x{i} by"))
                acked.append((written.entries[0].entry_id, f"mark{name}x{i}"))
            except Exception as exc:  # every error is a finding: none may escape
                errors.append(f"{type(exc).__name__}: {exc}")
    out.put((acked, errors))


async def _search_until(url: str, stop: Any, out: Any) -> None:
    searches, errors = 0, []
    async with _memory(url) as memory:
        while not stop.is_set():
            if await memory.head() is None:
                await asyncio.sleep(0.01)
                continue
            try:
                await memory.search(SearchMemoryRequest(query="by", limit=20))
                searches += 1
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
    out.put(([searches], errors))


def writer(url: str, name: str, out: Any) -> None:
    asyncio.run(_write_singles(url, name, out))


def searcher(url: str, stop: Any, out: Any) -> None:
    asyncio.run(_search_until(url, stop, out))


async def _found(memory: ScopedMemory, entry_id: str, query: str, mode: str) -> bool:
    page = await memory.search(SearchMemoryRequest(query=query, limit=3, mode=mode))  # type: ignore[arg-type]
    return entry_id in [hit.entry_id for hit in page.hits]


async def test_two_writers_and_a_searcher_lose_nothing(url: str) -> None:
    ctx = mp.get_context("spawn")
    out, stop = ctx.Queue(), ctx.Event()
    reader = ctx.Process(target=searcher, args=(url, stop, out))
    writers = [ctx.Process(target=writer, args=(url, name, out)) for name in "ab"]
    for process in (reader, *writers):
        process.start()
    try:
        results = [await asyncio.to_thread(out.get, True, TIMEOUT) for _ in writers]
        stop.set()
        results.append(await asyncio.to_thread(out.get, True, TIMEOUT))
    finally:
        stop.set()
        for process in (reader, *writers):
            process.join(TIMEOUT)
    assert [errors for _, errors in results] == [[], [], []]
    acked = [item for items, _ in results[:2] for item in items]
    assert len(acked) == 2 * WRITES and results[2][0][0] > 0
    async with _memory(url) as memory:
        head = await memory.head()
        assert head is not None and head.revision == 2 * WRITES
        assert await memory.pending_vectors() == 0
        for entry_id, mark in acked:
            assert await _found(memory, entry_id, mark, "fts"), mark
            assert await _found(memory, entry_id, f"{mark} by", "vector"), mark


async def _remember_batch(url: str, round_: int, started: Any) -> None:
    async with _memory(url) as memory:
        requests = [
            RememberMemoryRequest(
                text=f"round{round_} item{i} mark{round_}x{i}", thread=f"t{i % 7}"
            )
            for i in range(BATCH)
        ]
        started.set()
        await memory.remember_many(requests)


def batch_writer(url: str, round_: int, started: Any) -> None:
    asyncio.run(_remember_batch(url, round_, started))


async def _all_texts(memory: ScopedMemory) -> dict[str, str]:
    texts: dict[str, str] = {}
    page = await memory.list(limit=1000)
    while True:
        texts.update((entry.entry_id, entry.text) for entry in page.entries)
        if page.next_cursor is None:
            return texts
        page = await memory.list(limit=1000, cursor=page.next_cursor)


def _hashes_apart(text: str) -> bool:
    """Whether the `hash` embedder gives each of the text's tokens a bucket of its own."""
    (vector,) = HashingEmbedder().embed_sync([text])
    return int(np.count_nonzero(vector)) == len(set(analyze(text)))


async def test_a_kill_mid_remember_many_leaves_the_batch_whole_or_absent(url: str) -> None:
    ctx = mp.get_context("spawn")
    unused = ctx.Event()  # held: the child opens it by name after start() returns
    first = ctx.Process(target=batch_writer, args=(url, 0, unused))
    began = time.monotonic()
    first.start()
    await asyncio.to_thread(first.join, TIMEOUT)
    assert first.exitcode == 0
    took = time.monotonic() - began
    async with _memory(url) as memory:  # an erased entry must stay unfound after the kills
        erased, erased_text = next(iter((await _all_texts(memory)).items()))
        await memory.forget(erased)
    for round_, share in enumerate((0.25, 0.5, 0.75), start=1):
        started = ctx.Event()
        process = ctx.Process(target=batch_writer, args=(url, round_, started))
        process.start()
        assert await asyncio.to_thread(started.wait, TIMEOUT)
        await asyncio.sleep(took * share * random.Random(round_).uniform(0.8, 1.2))
        process.kill()
        await asyncio.to_thread(process.join, TIMEOUT)

    async with _memory(url) as memory:
        texts = await _all_texts(memory)
        rounds = Counter(text.split()[0] for text in texts.values())
        assert rounds["round0"] == BATCH - 1
        assert all(count == BATCH for name, count in rounds.items() if name != "round0"), rounds
        head = await memory.head()
        assert head is not None and head.revision == len(rounds) + 1  # + the forget
        for _ in range(TIMEOUT * 5):  # the vectors a kill left pending, filled on reopening
            if await memory.pending_vectors() == 0:
                break
            await asyncio.sleep(0.2)
        assert await memory.pending_vectors() == 0
        # Feature hashing can put two of a text's three tokens in one bucket with opposite
        # signs (item2886 and mark0x2886 do, in 384 buckets): its vector is then that of
        # "round0" alone, tied with thousands. Such texts say nothing about a vector's presence.
        telling = [(key, text) for key, text in sorted(texts.items()) if _hashes_apart(text)]
        sample = random.Random(7).sample(telling, 60)
        missed = []
        for entry_id, text in sample:
            assert await _found(memory, entry_id, text.split()[2], "fts"), text
            if not await _found(memory, entry_id, text, "vector"):
                missed.append(text)
        # SQLite compares exactly. Past 2,000 active versions PostgreSQL walks its HNSW graph,
        # whose recall on feature-hashed vectors (the `hash` embedder) is below 1 by design
        # (docs/postgres.md): an entry's own text can miss its top 3 there, rarely.
        allowed = 0 if url.startswith("sqlite") else len(sample) // 10
        assert len(missed) <= allowed, missed
        assert erased not in texts
        assert not await _found(memory, erased, erased_text.split()[2], "fts")
        assert not await _found(memory, erased, erased_text, "vector")
        for absent in sorted({f"round{n}" for n in range(4)} - set(rounds)):
            mark = absent.replace("round", "mark") + "x5"
            page = await memory.search(SearchMemoryRequest(query=mark, limit=3, mode="fts"))
            assert [hit.text for hit in page.hits if mark in hit.text.split()] == [], mark
