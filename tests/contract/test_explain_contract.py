"""Contract: each hit explains its per-channel rank and raw score; floors apply per channel."""

from __future__ import annotations

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.ports import MemoryStore
from powercontext.memory.service import MemoryService


async def test_hits_carry_rank_and_raw_score_per_channel(store: MemoryStore) -> None:
    service = MemoryService(store, embedder=HashingEmbedder(dimension=64))
    memory = service.for_scope("explain")
    texts = ["the green kettle", "green tea at noon", "a red bicycle", "kettle descaling"]
    await memory.remember_many([RememberMemoryRequest(text=t) for t in texts])

    page = await memory.search(SearchMemoryRequest(query="green kettle", mode="hybrid"))
    assert page.hits
    for hit in page.hits:
        assert {e.channel for e in hit.explain} == set(hit.matched_by)
        for e in hit.explain:
            if e.channel == "vector":
                assert -1.0 <= e.score <= 1.0
    ranks = {
        channel: [e.rank for h in page.hits for e in h.explain if e.channel == channel]
        for channel in ("fts", "vector")
    }
    assert sorted(ranks["fts"]) == list(range(1, len(ranks["fts"]) + 1))
    fts_scores = sorted(
        (e.rank, e.score) for h in page.hits for e in h.explain if e.channel == "fts"
    )
    assert [s for _, s in fts_scores] == sorted((s for _, s in fts_scores), reverse=True)
    assert page.hits[0].text == "the green kettle"

    # A floor above every raw score empties that channel; the other one still answers.
    top_fts = max(s for _, s in fts_scores)
    fts_only = await memory.search(
        SearchMemoryRequest(query="green kettle", mode="fts", min_score=top_fts + 1.0)
    )
    assert fts_only.hits == ()
    vector_scores = [e.score for h in page.hits for e in h.explain if e.channel == "vector"]
    strict = await memory.search(
        SearchMemoryRequest(
            query="green kettle", mode="vector", min_similarity=max(vector_scores) - 1e-6
        )
    )
    assert len(strict.hits) == 1
    loose = await memory.search(
        SearchMemoryRequest(query="green kettle", mode="vector", min_similarity=-1.0, limit=10)
    )
    assert len(loose.hits) == len(texts)  # every entry passes a floor of -1
