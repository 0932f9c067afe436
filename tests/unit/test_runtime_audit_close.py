"""Closing a runtime: calls in flight finish, later calls get one clear error, nothing outlives it.

Before memory.calls, the store closed under a running write: the write had committed, yet its
caller got "the SQLite store is closed" from the read-back (a retry would write it twice), and
a `Runtime.reindex` after the close restarted the vector backfill against the closed store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest, StorageError
from powercontext.memory.calls import CLOSED_MESSAGE
from powercontext.testing import FakeEmbedder


class HeldEmbedder(FakeEmbedder):
    """Documents wait for `release`: a write stays in flight after its commit."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.waiting = asyncio.Event()

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.waiting.set()
        await self.release.wait()
        return await super().embed_documents(texts)


def _settings(tmp_path: Path, **runtime: float) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'memory.db'}"),
        inference=InferenceConfig(embedding_model="none"),
        runtime=RuntimeConfig(**runtime),
    )


async def test_a_write_in_flight_when_the_runtime_closes_returns_its_result(
    tmp_path: Path,
) -> None:
    embedder = HeldEmbedder()
    settings = _settings(tmp_path, vector_backfill_interval_seconds=0)
    async with open_runtime(settings, embedding_model=embedder) as runtime:
        memory = runtime.memory.for_scope("s")
        write = asyncio.create_task(memory.remember(RememberMemoryRequest(text="in flight")))
        await embedder.waiting.wait()  # committed; now embedding
        asyncio.get_running_loop().call_later(0.2, embedder.release.set)
    result = await write
    assert result.memory_ref.revision == 1
    assert result.vectors_pending == 0
    async with open_runtime(settings) as runtime:
        page = await runtime.memory.for_scope("s").search(SearchMemoryRequest(query="flight"))
    assert [hit.text for hit in page.hits] == ["in flight"]


async def test_every_call_after_close_says_the_runtime_is_closed(tmp_path: Path) -> None:
    async with open_runtime(_settings(tmp_path)) as runtime:
        memory = runtime.memory.for_scope("s")
        await memory.remember(RememberMemoryRequest(text="before the close"))
    calls = [
        memory.remember(RememberMemoryRequest(text="after")),
        memory.search(SearchMemoryRequest(query="after")),
        memory.list(),
        memory.head(),
        memory.changes(),
        runtime.memory.scopes(),
        runtime.reindex(),
    ]
    for call in calls:
        with pytest.raises(StorageError) as caught:
            await asyncio.wait_for(call, 5)
        assert str(caught.value) == CLOSED_MESSAGE


async def test_reindex_after_close_does_not_restart_the_backfill(tmp_path: Path) -> None:
    settings = _settings(tmp_path, vector_backfill_interval_seconds=0.05)
    async with open_runtime(settings, embedding_model=FakeEmbedder()) as runtime:
        assert runtime.backfill is not None
    with pytest.raises(StorageError):
        await runtime.reindex()
    await asyncio.sleep(0.1)
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert not any(t.get_name() == "powercontext-vector-backfill" for t in others)


async def test_a_call_made_by_a_call_in_flight_is_not_refused(tmp_path: Path) -> None:
    # A revise reads its citation through `get`, another gated call: when the runtime starts
    # closing in between, that inner call belongs to the revise and must go on.
    async with open_runtime(_settings(tmp_path)) as runtime:
        memory = runtime.memory.for_scope("s")
        await memory.remember(RememberMemoryRequest(text="one"))
        async with runtime.memory.calls.call():
            runtime.memory.calls.refuse()
            assert runtime.memory.calls.active == 1
            head = await memory.head()
        with pytest.raises(StorageError):
            await memory.head()
    assert head is not None and head.revision == 1
