"""Index templates and contextual indexing through open_runtime on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from powercontext import open_runtime
from powercontext.memory import RememberMemoryRequest, ReviseMemoryRequest, SearchMemoryRequest
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
        assert [hit.text for hit in page.hits] == [TURNS[0][1]]


async def _similarities(rt: object, scope: str, query: str) -> list[tuple[str, float]]:
    store = rt.store  # type: ignore[attr-defined]
    embedder = rt.embedding_model  # type: ignore[attr-defined]
    head = await store.head(scope)
    vector = np.asarray(await embedder.embed_query(query), dtype=np.float32)
    vector /= np.linalg.norm(vector)
    found = await store.vector_candidates(scope, head, embedder.profile.profile_id, vector, limit=9)
    texts = await store.fetch_versions(scope, [c.key for c in found])
    return sorted((texts[c.key].text, round(c.similarity, 5)) for c in found)


async def test_reindex_rebuilds_the_contextual_vectors_the_write_stored(tmp_path: Path) -> None:
    embedder = FakeEmbedder(64)
    settings = sqlite_settings(tmp_path / "m.db", "hash", **CONTEXT)
    queries = ("canoe lake", "report Monday", "wetsuits")
    async with open_runtime(settings, embedding_model=embedder) as rt:
        for scope in ("written", "reindexed"):
            # batch 1 embeds fine everywhere; batch 2 fails in "reindexed" only, so reindex
            # must rebuild batch 2's neighbourhoods without batch 1's entries
            await rt.memory.for_scope(scope).remember_many(_requests())
            embedder.fail_documents = scope == "reindexed"
            result = await rt.memory.for_scope(scope).remember_many(_requests()[::-1])
            embedder.fail_documents = False
        assert result.vectors_pending == len(TURNS)
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
