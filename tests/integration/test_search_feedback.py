"""Feedback in both channels through open_runtime on a real SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from powercontext import open_runtime
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.scoped import ScopedMemory
from powercontext.testing import FakeEmbedder
from tests.integration.conftest import sqlite_settings

TEXTS = [
    "We went camping by the lake and roasted marshmallows in the tent.",
    "Camping again: marshmallows, a tent, and a campfire.",
    "The kids loved the marshmallows and sleeping in a tent.",
    "The quarterly report is due on Monday.",
    "My brother hates camping.",
    "Camping gear prices went up this year.",
]
CAMPING = [TEXTS[0], TEXTS[1], TEXTS[4], TEXTS[5]]


@asynccontextmanager
async def _camping(path: Path) -> AsyncIterator[tuple[Any, ScopedMemory]]:
    """TEXTS written to scope `chat` of a runtime with the hash embedder and 4 feedback docs."""
    async with open_runtime(sqlite_settings(path, "hash", search_feedback_docs=4)) as rt:
        memory = rt.memory.for_scope("chat")
        await memory.remember_many([RememberMemoryRequest(text=text) for text in TEXTS])
        yield rt, memory


_CAMPING = SearchMemoryRequest(query="camping", mode="hybrid")


# Other topics: with them a topic word of TEXTS is held by a small share of the scope.
OTHERS = [f"Note {i}: the budget review moved to week {i}." for i in range(20)]


async def _found(
    path: Path, query: str, mode: str, texts: list[str] = TEXTS, **runtime: object
) -> list[str]:
    async with open_runtime(sqlite_settings(path, "hash", **runtime)) as rt:
        memory = rt.memory.for_scope("chat")
        await memory.remember_many([RememberMemoryRequest(text=text) for text in texts])
        page = await memory.search(SearchMemoryRequest(query=query, mode=mode))  # type: ignore[arg-type]
        return [hit.text for hit in page.hits]


async def test_full_text_feedback_finds_the_entry_that_shares_the_topic_not_the_words(
    tmp_path: Path,
) -> None:
    scope = TEXTS + OTHERS
    without = await _found(tmp_path / "off.db", "camping", "fts", scope, search_feedback_docs=0)
    assert sorted(without) == sorted(CAMPING)
    # Every match is read as relevant; tent and marshmallows are in two of them, in at most
    # half the candidates and in 3 of the scope's 26 entries: the third tent entry joins
    # behind the question's matches.
    found = await _found(tmp_path / "on.db", "camping", "fts", scope, search_feedback_docs=4)
    assert sorted(found[:4]) == sorted(CAMPING)
    assert found[4:] == [TEXTS[2]]


async def test_full_text_feedback_leaves_out_words_more_entries_hold_than_the_bound(
    tmp_path: Path,
) -> None:
    """search_feedback_max_scope_entries bounds the same rule by a count: tent and
    marshmallows are in 3 of the 26 entries, a share the default allows."""
    scope = TEXTS + OTHERS
    for entries, joined in ((3, [TEXTS[2]]), (2, []), (0, [TEXTS[2]])):
        found = await _found(
            tmp_path / f"bound{entries}.db",
            "camping",
            "fts",
            scope,
            search_feedback_docs=4,
            search_feedback_max_scope_entries=entries,
        )
        assert sorted(found[:4]) == sorted(CAMPING), entries
        assert found[4:] == joined, entries


async def test_full_text_feedback_leaves_out_words_much_of_the_scope_holds(
    tmp_path: Path,
) -> None:
    """In TEXTS alone, tent and marshmallows are in half the scope: above the default share
    (search_feedback_max_scope_share 0.2), no expansion term is left and nothing joins."""
    found = await _found(tmp_path / "six.db", "camping", "fts", search_feedback_docs=4)
    assert sorted(found) == sorted(CAMPING)
    found = await _found(
        tmp_path / "any.db",
        "camping",
        "fts",
        search_feedback_docs=4,
        search_feedback_max_scope_share=1.0,
    )
    assert found[4:] == [TEXTS[2]]


async def test_vector_feedback_embeds_the_question_with_the_best_full_text_match(
    tmp_path: Path,
) -> None:
    for docs, calls in ((0, 1), (1, 2)):
        embedder = FakeEmbedder(64)
        settings = sqlite_settings(
            tmp_path / f"{docs}.db", "hash", search_vector_feedback_docs=docs
        )
        async with open_runtime(settings, embedding_model=embedder) as rt:
            memory = rt.memory.for_scope("chat")
            await memory.remember_many([RememberMemoryRequest(text=text) for text in TEXTS])
            before = embedder.query_calls
            page = await memory.search(SearchMemoryRequest(query="camping", mode="hybrid"))
            assert embedder.query_calls - before == calls, docs
            assert page.hits[0].text in CAMPING
        # The expansion failing must not fail the search: the question's own ranking stands.
    embedder = FakeEmbedder(64)
    async with open_runtime(
        sqlite_settings(tmp_path / "fail.db", "hash", search_vector_feedback_docs=1),
        embedding_model=embedder,
    ) as rt:
        memory = rt.memory.for_scope("chat")
        await memory.remember_many([RememberMemoryRequest(text=text) for text in TEXTS])
        original = embedder.embed_query
        seen: list[str] = []

        async def second_fails(text: str):  # type: ignore[no-untyped-def]
            seen.append(text)
            if len(seen) > 1:
                raise ConnectionError("provider down")
            return await original(text)

        embedder.embed_query = second_fails  # type: ignore[method-assign]
        page = await memory.search(SearchMemoryRequest(query="camping", mode="hybrid"))
        assert len(seen) == 2 and seen[1].startswith("camping\n")
        assert page.hits


async def test_full_text_feedback_overlaps_the_vector_channel_and_ranks_alike(
    tmp_path: Path,
) -> None:
    # The vector search below waits until the second full-text run has finished: that only
    # completes when the full-text chain (first run, admission, feedback run) runs beside
    # the vector channel rather than after it.
    async with _camping(tmp_path / "overlap.db") as (rt, memory):
        request = _CAMPING
        alone = await memory.search(request)

        store: Any = rt.store
        fts_runs, vector_waits = 0, 0
        second_run_done = asyncio.Event()
        first_fts, first_vector = store.fts_candidates, store.vector_candidates

        async def fts(query: Any) -> Any:
            nonlocal fts_runs
            found = await first_fts(query)
            fts_runs += 1
            if fts_runs == 2:
                second_run_done.set()
            return found

        async def vector(query: Any) -> Any:
            nonlocal vector_waits
            vector_waits += 1
            await asyncio.wait_for(second_run_done.wait(), timeout=10)
            return await first_vector(query)

        store.fts_candidates, store.vector_candidates = fts, vector
        overlapped = await memory.search(request)
        assert (fts_runs, vector_waits) == (2, 1)
        assert [h.text for h in overlapped.hits] == [h.text for h in alone.hits]
        assert [h.score for h in overlapped.hits] == [h.score for h in alone.hits]


async def test_the_vector_search_is_handed_to_its_thread_before_the_full_text_chain_runs(
    tmp_path: Path,
) -> None:
    # A small scope's full-text search runs on the event loop without yielding: the vector
    # search must already be in its worker thread by then, or the two would not overlap.
    async with _camping(tmp_path / "order.db") as (rt, memory):
        request = _CAMPING
        await memory.search(request)  # fills both caches
        store: Any = rt.store
        order: list[str] = []
        first_fts, first_vector = store.fts_candidates, store.vector_candidates

        async def fts(query: Any) -> Any:
            order.append("fts")
            return await first_fts(query)

        async def vector(query: Any) -> Any:
            order.append("vector")
            return await first_vector(query)

        store.fts_candidates, store.vector_candidates = fts, vector
        await memory.search(request)
        assert order[0] == "vector"
