"""Audit of issue 25: a batch search honours POWERCONTEXT_SERVER_RUNTIME_EMBEDDING_BATCH_SIZE.

The README documents that setting as "texts per embedding call", and the write path and the
backfill keep to it. A batch search sent every query in one `embed_queries` call whatever its
size. A deployment that bounds the calls for its provider (TEI refuses more than 32 inputs by
default) saw a batch of 33 or more queries fail its embedding: every `auto` search was served
from full text and any explicit `hybrid` search failed the whole batch, although each search
alone succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.memory.errors import CapabilityNotSupportedError
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.ports import MemoryStore
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.memory.values import SearchMode
from powercontext.testing.embedders import FakeEmbedder
from tests.integration.conftest import sqlite_settings

TOPICS = ("deploy", "invoice", "garden", "travel", "concert", "recipe", "kettle")


class BoundedEmbedder(FakeEmbedder):
    """Refuses a call with more than `bound` texts, as a provider with an input cap does;
    records the size of every call."""

    def __init__(self, bound: int) -> None:
        super().__init__(64)
        self.bound = bound
        self.sizes: list[int] = []

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self._check(len(texts))
        return await super().embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        self.sizes.append(1)
        return await super().embed_query(text)

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.sizes.append(len(texts))
        self._check(len(texts))
        return await super().embed_queries(texts)

    def _check(self, count: int) -> None:
        if count > self.bound:
            raise ConnectionError(f"413: at most {self.bound} inputs per request")


def _requests(mode: SearchMode = "hybrid") -> list[SearchMemoryRequest]:
    return [SearchMemoryRequest(query=f"the {topic}", limit=3, mode=mode) for topic in TOPICS]


async def _seeded(store: MemoryStore, embedder: FakeEmbedder) -> MemoryService:
    service = MemoryService(store, embedder=embedder, config=SearchConfig(embedding_batch_size=3))
    entries = [RememberMemoryRequest(text=f"note {i} on the {t}") for i in (1, 2) for t in TOPICS]
    await service.remember_many("s", entries)
    return service


async def test_a_batch_embeds_its_queries_at_most_the_batch_size_per_call(
    store: MemoryStore,
) -> None:
    embedder = BoundedEmbedder(bound=3)
    service = await _seeded(store, embedder)
    embedder.sizes.clear()
    pages = await service.search_batch("s", _requests())
    assert embedder.sizes and max(embedder.sizes) <= 3, embedder.sizes
    assert sum(embedder.sizes) == len(TOPICS)
    singles = [await service.search("s", r) for r in _requests()]
    assert [p.mode for p in pages] == ["hybrid"] * len(TOPICS)
    assert pages == tuple(singles)


async def test_auto_searches_of_a_large_batch_keep_their_vector_channel(
    store: MemoryStore,
) -> None:
    embedder = BoundedEmbedder(bound=3)
    service = await _seeded(store, embedder)
    pages = await service.search_batch("s", _requests("auto"))
    assert [p.mode for p in pages] == ["hybrid"] * len(TOPICS)


async def test_a_chunk_that_fails_still_fails_the_explicit_searches(store: MemoryStore) -> None:
    embedder = BoundedEmbedder(bound=3)
    service = await _seeded(store, embedder)
    embedder.fail_queries = True
    with pytest.raises(CapabilityNotSupportedError, match=r"^searches\.0: .*'hybrid' failed"):
        await service.search_batch("s", _requests())
    pages = await service.search_batch("s", _requests("auto"))
    assert [p.mode for p in pages] == ["fts"] * len(TOPICS)


async def test_the_setting_reaches_batch_search_through_the_runtime(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path / "bounded.db", embedding_batch_size=2)
    embedder = BoundedEmbedder(bound=2)
    async with open_runtime(settings, embedding_model=embedder) as runtime:
        memory = runtime.memory.for_scope("s")
        await memory.remember_many(
            [RememberMemoryRequest(text=f"note about the {topic}") for topic in TOPICS]
        )
        embedder.sizes.clear()
        pages = await memory.search_batch(_requests())
    assert max(embedder.sizes) <= 2 and sum(embedder.sizes) == len(TOPICS)
    assert all(page.hits and page.mode == "hybrid" for page in pages)
