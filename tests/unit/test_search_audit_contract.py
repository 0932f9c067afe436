"""Search as the docs describe it, checked from outside through the in-process runtime:
explain's full-text score for an entry found only through pseudo-relevance feedback
(docs/search-quality.md: 0), and a batch search's errors naming their search even in a batch
of one (docs/http.md: `searches.N`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.memory import (
    CapabilityNotSupportedError,
    RememberMemoryRequest,
    ScopedMemory,
    SearchMemoryRequest,
)
from powercontext.memory.ports import FtsCandidate
from powercontext.memory.search.admission import admit
from powercontext.memory.search.analyze import AnalyzerConfig
from powercontext.memory.search.feedback import FeedbackConfig, feed_back
from powercontext.testing.embedders import FakeEmbedder
from tests.runtime_settings import sqlite_settings

ROASTED = "We roasted marshmallow in the tent"
# Three short entries share "tent" and "marshmallow" with "camping": the question's first
# matches, so feedback expands with those words and finds ROASTED, which lacks "camping".
CAMPING = [
    "camping tent marshmallow",
    "camping tent marshmallow fire",
    "camping tent marshmallow night",
    *(f"camping with my family yesterday afternoon number {i}" for i in range(6)),
    ROASTED,
    *(f"filler entry about budget invoice {i}" for i in range(25)),
]


@pytest.fixture
async def fts_only(tmp_path: Path) -> AsyncIterator[ScopedMemory]:
    async with open_runtime(sqlite_settings(tmp_path, "none")) as runtime:
        yield runtime.memory.for_scope("s")


async def test_an_entry_found_only_through_the_expansion_explains_a_full_text_score_of_0(
    fts_only: ScopedMemory,
) -> None:
    await fts_only.remember_many([RememberMemoryRequest(text=t) for t in CAMPING])
    page = await fts_only.search(SearchMemoryRequest(query="camping", mode="fts", limit=20))
    by_text = {hit.text: hit for hit in page.hits}
    assert ROASTED in by_text  # found, through the expansion only
    (expanded,) = by_text[ROASTED].explain
    assert expanded.channel == "fts" and expanded.score == 0.0
    # The question's own matches keep their BM25, and every one ranks above the expansion's.
    own = [hit.explain[0] for hit in page.hits if "camping" in hit.text]
    assert len(own) == 9 and all(e.score > 0 for e in own)
    assert max(e.rank for e in own) < expanded.rank
    # The fused score still follows the merged rank: 1 / (k + rank), k = 20.
    assert by_text[ROASTED].score == pytest.approx(1 / (20 + expanded.rank), abs=1e-15)


async def test_an_entry_the_question_did_not_admit_explains_0_once_the_expansion_does() -> None:
    # Three query terms need two matches: key 4 holds one ("camp"), so only the expansion
    # ("tent", "marshmallow") admits it, though the question's run found it.
    def fts(key: int, score: float, *tokens: str) -> FtsCandidate:
        return FtsCandidate(key=key, score=score, tokens=frozenset(tokens))

    terms = ["camp", "lake", "hike"]
    found = [
        fts(1, 3.0, "camp", "lake", "tent", "marshmallow"),
        fts(2, 2.5, "camp", "hike", "tent", "marshmallow"),
        fts(3, 2.0, "lake", "hike", "paint"),
        fts(4, 1.5, "camp", "tent", "marshmallow"),
        *(fts(k, 1.0, "lake", "hike", f"other{k}") for k in range(5, 12)),
    ]
    second = [fts(4, 9.0, "camp", "tent", "marshmallow"), fts(12, 8.0, "tent", "marshmallow")]

    async def channel(expansion: list[str]) -> list[FtsCandidate]:
        assert sorted(expansion) == ["marshmallow", "tent"]
        return second

    config = FeedbackConfig(docs=3, terms=5, min_lift=0.0)
    fed = await feed_back(admit(found, (), terms), terms, channel, config, AnalyzerConfig(), k=20)
    scores = {c.key: c.score for c in fed.fts_found}
    assert {4, 12} <= set(fed.keys["fts"])
    assert scores[4] == 0.0 and scores[12] == 0.0
    assert scores[1] == 3.0 and scores[2] == 2.5  # admitted by the question: its own BM25


async def test_a_batch_of_one_names_its_search_as_any_batch_does(fts_only: ScopedMemory) -> None:
    await fts_only.remember(RememberMemoryRequest(text="We deploy on Fridays."))
    vector = SearchMemoryRequest(query="deploy", mode="vector")
    with pytest.raises(CapabilityNotSupportedError) as batch:
        await fts_only.search_batch([vector])
    assert str(batch.value).startswith("searches.0: search mode 'vector' needs an embedding")
    with pytest.raises(CapabilityNotSupportedError) as single:
        await fts_only.search(vector)
    assert str(single.value).startswith("search mode 'vector' needs an embedding")


async def test_a_failed_query_embedding_in_a_batch_of_one_names_its_search(
    tmp_path: Path,
) -> None:
    embedder = FakeEmbedder()
    async with open_runtime(sqlite_settings(tmp_path, "hash"), embedding_model=embedder) as runtime:
        memory = runtime.memory.for_scope("s")
        await memory.remember(RememberMemoryRequest(text="We deploy on Fridays."))
        embedder.fail_queries = True
        hybrid = SearchMemoryRequest(query="deploy", mode="hybrid")
        with pytest.raises(CapabilityNotSupportedError) as batch:
            await memory.search_batch([hybrid])
        assert str(batch.value).startswith("searches.0: search mode 'hybrid' failed: embedding")
        assert isinstance(batch.value.__cause__, ConnectionError)
        with pytest.raises(CapabilityNotSupportedError) as single:
            await memory.search(hybrid)
        assert str(single.value).startswith("search mode 'hybrid' failed: embedding")
