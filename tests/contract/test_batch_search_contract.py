"""Contract: a batch search answers every page at one exact revision, on every backend.

One head read, one embedder call for all queries, reranks bounded by the generation request
limit; the single search's failure policy applies per query.
"""

from __future__ import annotations

import asyncio

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.errors import (
    CapabilityNotSupportedError,
    InferenceUnavailableError,
    MemoryValidationError,
)
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import (
    MemoryHit,
    MemoryRerankDecision,
    RememberMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.rerank.guard import GuardedReranker
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.testing.embedders import FakeEmbedder

TOPICS = ("deploy", "invoice", "garden", "travel", "concert", "recipe")


class SlowReranker:
    """Reverses the pool after a pause; records the most reranks in flight at once."""

    policy_id = "test.slow"

    def __init__(self, fail_on: str | None = None) -> None:
        self.in_flight = 0
        self.most_in_flight = 0
        self.fail_on = fail_on

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            if query == self.fail_on:
                raise InferenceUnavailableError("provider down")
            ranks = tuple(range(len(candidates), 0, -1))[:limit]
            return MemoryRerankDecision(selected_ranks=ranks)
        finally:
            self.in_flight -= 1


async def _seed(service: MemoryService) -> None:
    await service.remember_many(
        "s",
        [
            RememberMemoryRequest(text=f"note {i} about the {topic}")
            for i in range(4)
            for topic in TOPICS
        ],
    )


def _queries(n: int) -> list[SearchMemoryRequest]:
    return [SearchMemoryRequest(query=f"the {TOPICS[i % len(TOPICS)]}", limit=3) for i in range(n)]


async def test_batch_pages_match_single_searches_in_order(store: MemoryStore) -> None:
    embedder = FakeEmbedder(64)
    service = MemoryService(store, embedder=embedder)
    await _seed(service)
    requests = _queries(6)
    embedder.query_calls = 0
    pages = await service.search_batch("s", requests)
    assert embedder.query_calls == 1, "all queries are embedded in one call"
    singles = [await service.search("s", r) for r in requests]
    assert [p.mode for p in pages] == ["hybrid"] * 6
    assert [[h.entry_id for h in p.hits] for p in pages] == [
        [h.entry_id for h in p.hits] for p in singles
    ]
    assert all(TOPICS[i] in pages[i].hits[0].text for i in range(6))


async def test_batch_answers_one_revision_while_writes_land(store: MemoryStore) -> None:
    reranker = SlowReranker()
    service = MemoryService(
        store, embedder=HashingEmbedder(64), reranker=reranker, config=SearchConfig()
    )
    await _seed(service)
    head = (await service.head("s")).revision  # type: ignore[union-attr]
    stop = asyncio.Event()
    first_write = asyncio.Event()

    async def writer() -> int:
        written = 0
        while not stop.is_set():
            await service.remember_many(
                "s", [RememberMemoryRequest(text=f"fresh deploy garden travel {written}")]
            )
            written += 1
            first_write.set()
            await asyncio.sleep(0)
        return written

    writing = asyncio.create_task(writer())
    # Waiting on events, not a fixed sleep: a loaded machine may take long for one write.
    await asyncio.wait_for(first_write.wait(), timeout=30)
    pages = await service.search_batch("s", _queries(12))
    pinned = pages[0].memory_ref
    assert pinned is not None
    for _ in range(3000):  # at least one write lands after the batch's revision
        if (await service.head("s")).revision > pinned.revision:  # type: ignore[union-attr]
            break
        await asyncio.sleep(0.01)
    stop.set()
    written = await writing
    final_head = (await service.head("s")).revision  # type: ignore[union-attr]
    refs = {p.memory_ref for p in pages}
    assert len(refs) == 1
    (ref,) = refs
    assert ref is not None and head < ref.revision < final_head, (head, ref, final_head)
    assert written > 0
    for page in pages:
        assert all(hit.memory_ref == ref for hit in page.hits)
        assert page.rerank is not None
        assert all(hit.memory_ref == ref for hit in page.rerank.candidate_hits)
        # Entries written after the batch's head are never in its pools.
        fresh = [h for h in page.rerank.candidate_hits if h.text.startswith("fresh")]
        assert all(int(h.text.rsplit(" ", 1)[1]) < ref.revision - head for h in fresh)


async def test_a_search_repeated_in_a_batch_is_reranked_once(store: MemoryStore) -> None:
    class Counting(SlowReranker):
        def __init__(self) -> None:
            super().__init__()
            self.queries: list[str] = []

        async def rerank(
            self, query: str, candidates: tuple[MemoryHit, ...], limit: int
        ) -> MemoryRerankDecision:
            self.queries.append(query)
            return await super().rerank(query, candidates, limit)

    reranker = Counting()
    service = MemoryService(store, embedder=HashingEmbedder(64), reranker=reranker)
    await _seed(service)
    garden, travel = _queries(4)[2:4]
    fewer = garden.model_copy(update={"limit": 2})
    pages = await service.search_batch("s", [garden, travel, garden, fewer, garden])
    assert sorted(reranker.queries) == ["the garden", "the garden", "the travel"]
    assert pages[0] == pages[2] == pages[4] and len(pages[3].hits) == 2
    assert [h.entry_id for h in pages[0].hits] == [
        h.entry_id for h in (await service.search("s", garden)).hits
    ]


async def test_batch_reranks_are_concurrent_and_bounded(store: MemoryStore) -> None:
    reranker = SlowReranker()
    service = MemoryService(
        store,
        embedder=HashingEmbedder(64),
        reranker=reranker,
        config=SearchConfig(rerank_concurrency=3),
    )
    await _seed(service)
    pages = await service.search_batch("s", _queries(10))
    assert reranker.most_in_flight == 3
    assert all(p.rerank_status == "applied" for p in pages)


async def test_batch_fail_closed_fails_the_call_fail_open_marks_the_page(
    store: MemoryStore,
) -> None:
    requests = _queries(4)
    closed = MemoryService(store, embedder=HashingEmbedder(64), reranker=SlowReranker("the garden"))
    await _seed(closed)
    with pytest.raises(InferenceUnavailableError):
        await closed.search_batch("s", requests)
    opened = MemoryService(
        store,
        embedder=HashingEmbedder(64),
        reranker=GuardedReranker(SlowReranker("the garden"), failure_policy="fail_open"),
    )
    pages = await opened.search_batch("s", requests)
    assert [p.rerank_status for p in pages] == [
        "applied",
        "applied",
        "degraded_provider_error",
        "applied",
    ]


async def test_batch_size_is_bounded_and_never_empty(store: MemoryStore) -> None:
    service = MemoryService(store, config=SearchConfig(max_batch_queries=5))
    await _seed(service)
    with pytest.raises(MemoryValidationError, match="limit of 5"):
        await service.search_batch("s", _queries(6))
    with pytest.raises(MemoryValidationError):
        await service.search_batch("s", [])
    assert len(await service.search_batch("s", _queries(5))) == 5


async def test_batch_on_an_empty_scope_answers_empty_pages(store: MemoryStore) -> None:
    service = MemoryService(store)
    pages = await service.search_batch("empty", _queries(3))
    assert [(p.memory_ref, p.hits) for p in pages] == [(None, ())] * 3


async def test_batch_embedding_outage_serves_auto_from_fts_and_refuses_hybrid(
    store: MemoryStore,
) -> None:
    embedder = FakeEmbedder(64)
    service = MemoryService(store, embedder=embedder)
    await _seed(service)
    embedder.fail_queries = True
    pages = await service.search_batch("s", _queries(3))
    assert [p.mode for p in pages] == ["fts"] * 3
    assert all(TOPICS[i] in pages[i].hits[0].text for i in range(3))
    explicit = [*_queries(2), SearchMemoryRequest(query="the garden", mode="hybrid")]
    with pytest.raises(CapabilityNotSupportedError, match="'hybrid' failed"):
        await service.search_batch("s", explicit)


async def test_each_search_of_a_batch_has_its_own_filter_and_floors(store: MemoryStore) -> None:
    service = MemoryService(store, embedder=HashingEmbedder(64))
    await service.remember_many(
        "s",
        [
            RememberMemoryRequest(
                kind="rare" if i % 10 == 0 else "fact",
                text=f"kettle note {i}",
                metadata={"n": i, "parity": "even" if i % 2 == 0 else "odd"},
            )
            for i in range(60)
        ],
    )
    rare = MemoryFilter(kinds=["rare"])
    odd = MemoryFilter.model_validate({"metadata": {"parity": {"eq": "odd"}}})
    requests = [
        SearchMemoryRequest(query="kettle note", mode="hybrid", limit=5, filter=rare),
        SearchMemoryRequest(query="kettle note", mode="fts", limit=5, filter=odd),
        SearchMemoryRequest(query="kettle note", mode="fts", limit=5, min_score=1e9),
        SearchMemoryRequest(query="kettle note", mode="vector", limit=5, min_similarity=0.999),
        SearchMemoryRequest(query="kettle note", mode="vector", limit=5, min_similarity=-1.0),
    ]
    pages = await service.search_batch("s", requests)
    assert len(pages[0].hits) == 5 and all(h.kind == "rare" for h in pages[0].hits)
    assert len(pages[1].hits) == 5 and all(h.metadata["n"] % 2 for h in pages[1].hits)
    assert pages[2].hits == (), "min_score above every BM25 score admits nothing"
    assert pages[3].hits == (), "no entry is that close to the query"
    assert len(pages[4].hits) == 5, "a floor of -1 admits every vector candidate"
    singles = [await service.search("s", r) for r in requests]
    assert [[h.entry_id for h in p.hits] for p in pages] == [
        [h.entry_id for h in p.hits] for p in singles
    ]


async def test_a_batch_searches_one_revision(store: MemoryStore) -> None:
    service = MemoryService(store)
    await service.remember_many("s", [RememberMemoryRequest(text="kettle one")])
    await service.remember_many("s", [RememberMemoryRequest(text="kettle two")])
    old = [SearchMemoryRequest(query="kettle", mode="fts", revision=1)] * 2
    pages = await service.search_batch("s", old)
    assert [[h.text for h in p.hits] for p in pages] == [["kettle one"]] * 2
    assert {p.memory_ref.revision for p in pages if p.memory_ref} == {1}
    mixed = [old[0], SearchMemoryRequest(query="kettle", mode="fts", revision=2)]
    with pytest.raises(MemoryValidationError, match="one revision"):
        await service.search_batch("s", mixed)
