"""A forget in a long thread re-derives only the turns whose window reached the erased one:
one erasure in a thread of thousands of turns re-embeds a few neighbourhoods, not the thread
(a forget in a 5,000-turn thread took about 1.2 s with the hash embedder, 0.08 s now)."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore

TURNS = 300


class CountingEmbedder(HashingEmbedder):
    texts = 0

    async def embed_documents(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        self.texts += len(texts)
        return await super().embed_documents(texts)


async def test_a_forget_in_a_long_thread_re_embeds_only_the_erased_turns_neighbours() -> None:
    embedder = CountingEmbedder()
    config = SearchConfig(index=IndexTextConfig(context_before=2, context_after=2))
    async with await SqliteMemoryStore.open(":memory:") as store:
        memory = MemoryService(store, embedder=embedder, config=config).for_scope("s")
        requests = [
            RememberMemoryRequest(text=f"turn {i} word{i}", thread="long") for i in range(TURNS)
        ]
        written = await memory.remember_many(requests)
        middle = written.entries[TURNS // 2]
        embedder.texts = 0
        await memory.forget(middle.entry_id)
        # 4 neighbours, each its own text and its neighbourhood (the own text may be cached)
        assert embedder.texts <= 8, embedder.texts
        page = await memory.search(SearchMemoryRequest(query=f"word{TURNS // 2}", mode="fts"))
        assert page.hits == ()
        # the neighbours' windows closed over the gap: the turn two before now sees two after
        near = await memory.search(SearchMemoryRequest(query=f"word{TURNS // 2 + 2}", mode="fts"))
        found = {hit.text for hit in near.hits}
        assert f"turn {TURNS // 2 - 1} word{TURNS // 2 - 1}" in found
