"""A batch is all or nothing, and its error says which search failed (as the wire names the
fields of a batch: `searches.2`), with the cause; one search of its own needs no prefix."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from powercontext.memory.errors import CapabilityNotSupportedError
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.testing.embedders import FakeEmbedder


@pytest.fixture
async def store() -> AsyncIterator[SqliteMemoryStore]:
    opened = await SqliteMemoryStore.open(":memory:")
    try:
        yield opened
    finally:
        await opened.close()


async def _seeded(store: SqliteMemoryStore, embedder: FakeEmbedder | None) -> MemoryService:
    service = MemoryService(store, embedder=embedder)
    await service.remember_many("s", [RememberMemoryRequest(text=t) for t in ("deploy", "notes")])
    return service


async def test_an_explicit_mode_without_embedder_names_its_search(
    store: SqliteMemoryStore,
) -> None:
    service = await _seeded(store, None)
    batch = [
        SearchMemoryRequest(query="deploy", mode="fts"),
        SearchMemoryRequest(query="deploy"),
        SearchMemoryRequest(query="notes", mode="vector"),
    ]
    with pytest.raises(CapabilityNotSupportedError) as raised:
        await service.search_batch("s", batch)
    assert str(raised.value).startswith("searches.2: search mode 'vector' needs an embedding")
    with pytest.raises(CapabilityNotSupportedError) as single:
        await service.search("s", batch[2])
    assert str(single.value).startswith("search mode 'vector' needs an embedding")


async def test_a_failed_query_embedding_names_its_search_and_chains_the_cause(
    store: SqliteMemoryStore,
) -> None:
    embedder = FakeEmbedder(32)
    service = await _seeded(store, embedder)
    embedder.fail_queries = True
    batch = [SearchMemoryRequest(query="deploy"), SearchMemoryRequest(query="x", mode="hybrid")]
    with pytest.raises(CapabilityNotSupportedError) as raised:
        await service.search_batch("s", batch)
    assert str(raised.value).startswith("searches.1: search mode 'hybrid' failed: embedding")
    assert raised.value.__cause__ is not None
    # The auto search alone is served from full text, as the documented fallback says.
    (page,) = await service.search_batch("s", batch[:1])
    assert page.mode == "fts" and page.hits[0].text == "deploy"
