"""A retire or revise in a long thread re-derives its former neighbours from the few turns
around it, not from the whole thread: the store hands back a bounded number of rows, however
long the thread (a retire in a 20,000-turn thread took about a second when the thread was read
whole)."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import StoredVersion, VersionPage
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore

TURNS = 600


class CountingStore:
    """The store, counting the version rows its thread and listing reads hand back."""

    def __init__(self, inner: SqliteMemoryStore) -> None:
        self.inner = inner
        self.rows = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def list_versions(self, page: VersionPage) -> list[StoredVersion]:
        found = await self.inner.list_versions(page)
        self.rows += len(found)
        return found

    async def thread_tail(self, *args: Any, **kwargs: Any) -> list[StoredVersion]:
        found = await self.inner.thread_tail(*args, **kwargs)
        self.rows += len(found)
        return found


@pytest.mark.parametrize("operation", ["retire", "revise"])
async def test_a_removal_in_a_long_thread_reads_only_the_turns_around_it(operation: str) -> None:
    config = SearchConfig(index=IndexTextConfig(context_before=2, context_after=2))
    async with await SqliteMemoryStore.open(":memory:") as inner:
        store = CountingStore(inner)
        memory = MemoryService(store, embedder=HashingEmbedder(), config=config).for_scope("s")  # type: ignore[arg-type]
        requests = [
            RememberMemoryRequest(text=f"turn {i} word{i}", thread="long") for i in range(TURNS)
        ]
        written = await memory.remember_many(requests)
        middle = written.entries[TURNS // 2]
        store.rows = 0
        if operation == "retire":
            await memory.retire(RetireMemoryRequest(citation=middle.citation))
        else:
            await memory.revise(ReviseMemoryRequest(citation=middle.citation, text="changed"))
        assert store.rows <= 64, store.rows
        # and the gap closed: the turn's own word no longer finds its former neighbours
        page = await memory.search(SearchMemoryRequest(query=f"word{TURNS // 2}", mode="fts"))
        assert [hit.entry_id for hit in page.hits if hit.entry_id != middle.entry_id] == []
