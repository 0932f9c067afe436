"""Index templates and contextual indexing through open_runtime on a real SQLite file."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from powercontext import open_runtime
from powercontext.memory import RememberMemoryRequest, ReviseMemoryRequest, SearchMemoryRequest
from powercontext.memory.ports import VectorQuery
from powercontext.memory.scoped import ScopedMemory
from powercontext.testing import FakeEmbedder
from tests.integration.conftest import sqlite_settings

CONTEXT = {
    "index_context_before": 1,
    "index_context_after": 1,
    "index_context_group_key": "thread",
}
TURNS = [
    ("t1", "Did you finally go on the canoe trip?"),
    ("t1", "Yes, and the lake was freezing."),
    ("t2", "The quarterly report is due on Monday."),
    ("t1", "Next time we bring wetsuits."),
]


def _requests() -> list[RememberMemoryRequest]:
    return [
        RememberMemoryRequest(kind="turn", text=text, metadata={"thread": thread, "day": "Tue"})
        for thread, text in TURNS
    ]


async def test_neighbour_words_find_the_entry_and_hits_keep_their_stored_text(
    tmp_path: Path,
) -> None:
    async with open_runtime(sqlite_settings(tmp_path / "m.db", "hash", **CONTEXT)) as rt:
        memory = rt.memory.for_scope("chat")
        written = await memory.remember_many(_requests())
        page = await memory.search(SearchMemoryRequest(query="canoe", mode="fts", limit=10))
        found = {hit.text for hit in page.hits}
        # the canoe turn and its neighbour in the same thread; not the other thread's entry,
        # and not the t1 turn two places away
        assert found == {TURNS[0][1], TURNS[1][1]}
        stored = {e.entry_version_id: e.text for e in written.entries}
        assert all(stored[hit.entry_version_id] == hit.text for hit in page.hits)
        # "wetsuits" is next to "lake" in thread t1 although the t2 entry sits between them
        page = await memory.search(SearchMemoryRequest(query="wetsuits", mode="fts"))
        assert {hit.text for hit in page.hits} == {TURNS[1][1], TURNS[3][1]}


async def test_context_off_is_the_old_behaviour(tmp_path: Path) -> None:
    async with open_runtime(sqlite_settings(tmp_path / "m.db", "hash")) as rt:
        memory = rt.memory.for_scope("chat")
        await memory.remember_many(_requests())
        page = await memory.search(SearchMemoryRequest(query="canoe", mode="fts"))
        assert [hit.text for hit in page.hits] == [TURNS[0][1]]


async def test_template_metadata_is_searchable_but_not_stored(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path / "m.db", "hash", index_template="{text}\n{metadata[day]}")
    async with open_runtime(settings) as rt:
        memory = rt.memory.for_scope("chat")
        await memory.remember_many(_requests())
        await memory.remember(RememberMemoryRequest(text="no day here"))
        page = await memory.search(SearchMemoryRequest(query="tue", mode="fts", limit=10))
        assert sorted(hit.text for hit in page.hits) == sorted(text for _, text in TURNS)
        assert all("Tue" not in hit.text for hit in page.hits)
        assert (await memory.search(SearchMemoryRequest(query="here", mode="fts"))).hits


async def test_a_revised_entry_is_indexed_on_its_own(tmp_path: Path) -> None:
    async with open_runtime(sqlite_settings(tmp_path / "m.db", "hash", **CONTEXT)) as rt:
        memory = rt.memory.for_scope("chat")
        written = await memory.remember_many(_requests())
        lake = written.entries[1]
        await memory.revise(ReviseMemoryRequest(citation=lake.citation, text="The lake was warm."))
        page = await memory.search(SearchMemoryRequest(query="canoe", mode="fts", limit=10))
        # The new version is indexed alone, and the old one's place in the batch closes: the
        # wetsuits turn now neighbours the canoe turn, as `reindex --rebuild` indexes them.
        assert {hit.text for hit in page.hits} == {TURNS[0][1], TURNS[3][1]}


async def _similarities(rt: object, scope: str, query: str) -> list[tuple[str, float]]:
    store = rt.store  # type: ignore[attr-defined]
    embedder = rt.embedding_model  # type: ignore[attr-defined]
    head = await store.head(scope)
    vector = np.asarray(await embedder.embed_query(query), dtype=np.float32)
    vector /= np.linalg.norm(vector)
    found = await store.vector_candidates(
        VectorQuery(scope, head, embedder.profile.profile_id, vector, limit=9)
    )
    texts = await store.fetch_versions(scope, [c.key for c in found])
    return sorted((texts[c.key].text, round(c.similarity, 5)) for c in found)


async def test_reindex_rebuilds_the_contextual_vectors_the_write_stored(tmp_path: Path) -> None:
    embedder = FakeEmbedder(64)
    settings = sqlite_settings(tmp_path / "m.db", "hash", **CONTEXT)
    queries = ("canoe lake", "report Monday", "wetsuits")
    async with open_runtime(settings, embedding_model=embedder) as rt:
        pending = {}
        # "reindexed" first: the indexer reuses recent vectors by text, so batch 2 must not
        # have been embedded for another scope before it fails here
        for scope in ("reindexed", "written"):
            # batch 1 embeds fine everywhere; batch 2 fails in "reindexed" only, so reindex
            # must rebuild batch 2's neighbourhoods without batch 1's entries
            await rt.memory.for_scope(scope).remember_many(_requests())
            embedder.fail_documents = scope == "reindexed"
            result = await rt.memory.for_scope(scope).remember_many(_requests()[::-1])
            pending[scope] = result.vectors_pending
            embedder.fail_documents = False
        assert pending == {"reindexed": len(TURNS), "written": 0}
        assert await rt.memory.for_scope("reindexed").reindex() == len(TURNS)
        written = {q: await _similarities(rt, "written", q) for q in queries}
        assert written == {q: await _similarities(rt, "reindexed", q) for q in queries}
    async with open_runtime(
        sqlite_settings(tmp_path / "plain.db", "hash"), embedding_model=FakeEmbedder(64)
    ) as plain:
        await plain.memory.for_scope("written").remember_many(_requests())
        await plain.memory.for_scope("written").remember_many(_requests()[::-1])
        # the context is really in the vectors: without it the similarities differ
        assert {q: await _similarities(plain, "written", q) for q in queries} != written


THREADED = [
    ("s1", "Did you finally go on the canoe trip?"),
    ("s1", "Yes, and the lake was freezing."),
    ("s2", "The quarterly report is due on Monday."),
    ("s1", "Next time we bring wetsuits."),
    ("s2", "Marketing wants the numbers first."),
    ("s1", "I will buy the paddles in June."),
    ("s2", "Then we present on Friday."),
]
QUERIES = ("canoe", "lake wetsuits", "report numbers", "paddles june", "friday marketing")


def _threaded() -> list[RememberMemoryRequest]:
    return [
        RememberMemoryRequest(
            kind="turn",
            text=text,
            thread=thread,
            occurred_at=datetime(2023, 5, 8 + i, tzinfo=UTC),
            metadata={"i": i},
        )
        for i, (thread, text) in enumerate(THREADED)
    ]


async def _ranked(memory: ScopedMemory) -> list[list[tuple[int, float, tuple[str, ...]]]]:
    ranked = []
    for query in QUERIES:
        for mode in ("fts", "vector", "hybrid"):
            page = await memory.search(SearchMemoryRequest(query=query, mode=mode, limit=10))
            ranked.append([(h.metadata["i"], round(h.score, 9), h.matched_by) for h in page.hits])
    return ranked


async def test_turn_by_turn_and_batch_writes_search_alike(tmp_path: Path) -> None:
    """Contextual indexing by thread: the index of earlier turns is widened when a later
    turn arrives, so writing a conversation turn by turn gives the batch's search results."""
    async with open_runtime(sqlite_settings(tmp_path / "m.db", "hash")) as rt:
        batch = rt.memory.for_scope("batch")
        await batch.remember_many(_threaded())
        turns = rt.memory.for_scope("turns")
        for request in _threaded():
            await turns.remember(request)
            await turns.search(SearchMemoryRequest(query="canoe"))  # caches fill mid-way
        expected = await _ranked(batch)
        assert await _ranked(turns) == expected
        # "freezing" (turn 1 of thread s1) reaches the s1 turns up to two places away
        page = await turns.search(SearchMemoryRequest(query="freezing", mode="fts", limit=10))
        assert {hit.metadata["i"] for hit in page.hits} == {0, 1, 3, 5}
    # and again from a cold cache (the rewritten tokens are durable)
    async with open_runtime(sqlite_settings(tmp_path / "m.db", "hash")) as rt:
        assert await _ranked(rt.memory.for_scope("turns")) == expected


async def test_rebuild_brings_a_stale_scope_to_the_current_profile(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    off = {"index_context_before": 0, "index_context_after": 0, "index_event_date": False}
    async with open_runtime(sqlite_settings(tmp_path / "m.db", "hash", **off)) as rt:
        for request in _threaded():
            await rt.memory.for_scope("chat").remember(request)
        assert not await rt.memory.profiles.is_stale("chat")
    async with open_runtime(sqlite_settings(tmp_path / "m.db", "hash")) as rt:
        assert await rt.memory.profiles.stale_scopes() == ["chat"]
        memory = rt.memory.for_scope("chat")
        with caplog.at_level(logging.WARNING, logger="powercontext.memory"):
            page = await memory.search(SearchMemoryRequest(query="freezing", mode="fts"))
        assert [hit.metadata["i"] for hit in page.hits] == [1]  # searchable, on the old index
        assert "reindex --rebuild" in caplog.text
        head = await memory.head()
        progress: list[tuple[int, int]] = []
        assert await rt.memory.rebuild("chat", lambda done, total: progress.append((done, total)))
        assert progress[-1] == (2 * len(THREADED), 2 * len(THREADED))
        assert await memory.head() == head  # derived data only: no revision
        assert await rt.memory.profiles.stale_scopes() == []
        fresh = rt.memory.for_scope("fresh")
        await fresh.remember_many(_threaded())
        assert await _ranked(memory) == await _ranked(fresh)


async def test_a_named_participant_favours_their_entries_in_both_channels(
    tmp_path: Path,
) -> None:
    turns = [
        ("Caroline", "I went hiking once."),
        ("Melanie", "Hiking, hiking, I go hiking every weekend."),
    ]
    requests = [
        RememberMemoryRequest(text=text, metadata={"speaker": speaker}) for speaker, text in turns
    ]
    for boost, first in ((0.0, "Melanie"), (1.0, "Caroline")):
        settings = sqlite_settings(
            tmp_path / f"{boost}.db",
            "hash",
            search_participant_boost=boost,
            search_field_weight_speaker=0.0,  # the boost alone
        )
        async with open_runtime(settings) as rt:
            memory = rt.memory.for_scope("chat")
            await memory.remember_many(requests)
            page = await memory.search(
                SearchMemoryRequest(query="Where did caroline go hiking", mode="fts")
            )
            assert page.hits[0].metadata["speaker"] == first, boost
