"""The Memory core through open_runtime on a real PostgreSQL (POWERCONTEXT_SERVER_DATABASE_URL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    RevisionConflictError,
    SearchMemoryRequest,
)
from tests import pg_server

pytestmark = pytest.mark.postgres

FACTS = [
    "We deploy the billing service on Fridays after the freeze.",
    "Alice prefers tea over coffee in the morning.",
    "The staging database moved to PostgreSQL 16 in March.",
    "我们决定下周二在上海开会。",
    "東京タワーに行きました。",
]


def settings(url: str, embedding_model: str = "hash") -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=url),
        inference=InferenceConfig(embedding_model=embedding_model),
    )


@pytest.fixture
async def url(tmp_path: Path) -> str:
    return await pg_server.database_url(tmp_path)


async def test_every_mode_and_every_script(url: str) -> None:
    async with open_runtime(settings(url)) as rt:
        memory = rt.memory.for_scope("project")
        written = await memory.remember_many([RememberMemoryRequest(text=t) for t in FACTS])
        assert written.memory_ref.revision == 1 and written.vectors_pending == 0
        for mode in ("fts", "vector", "hybrid", "auto"):
            page = await memory.search(
                SearchMemoryRequest(query="when do we deploy billing", mode=mode)
            )
            assert page.mode == ("hybrid" if mode == "auto" else mode)
            assert "deploy" in page.hits[0].text, mode
        page = await memory.search(SearchMemoryRequest(query="tea", mode="fts"))
        k = rt.settings.runtime.search_rrf_k
        assert page.hits[0].score == 1 / (k + 1) and page.hits[0].matched_by == ("fts",)
        for query, expected in (("上海开会", FACTS[3]), ("東京", FACTS[4])):
            page = await memory.search(SearchMemoryRequest(query=query, mode="fts"))
            assert page.hits[0].text == expected
        for query in ('"billing', "tea*", "NEAR(tea", "tea OR -coffee", "a:b", "🚀 billing"):
            page = await memory.search(SearchMemoryRequest(query=query, mode="hybrid"))
            assert page.memory_ref is not None  # a result, never a database error


async def test_citations_stay_exact_across_revisions_and_reopening(url: str) -> None:
    async with open_runtime(settings(url)) as rt:
        memory = rt.memory.for_scope("project")
        await memory.remember_many([RememberMemoryRequest(text=t) for t in FACTS])
        hit = (await memory.search(SearchMemoryRequest(query="tea coffee", mode="fts"))).hits[0]
        revised = await memory.revise(
            ReviseMemoryRequest(citation=hit.citation, text="Alice now drinks coffee.")
        )
        with pytest.raises(RevisionConflictError):
            await memory.revise(ReviseMemoryRequest(citation=hit.citation, text="stale"))
        await memory.retire(RetireMemoryRequest(citation=revised.entries[0].citation))
    async with open_runtime(settings(url)) as rt:
        memory = rt.memory.for_scope("project")
        old = await memory.get(hit.citation)
        assert old is not None and old.text == FACTS[1] and not old.active
        assert (await memory.head()) is not None
        assert [c.op for c in (await memory.changes()).changes] == ["add"] * 5 + [
            "revise",
            "retire",
        ]
        assert len((await memory.list()).entries) == 4
        assert len((await memory.list(revision=1)).entries) == 5
        page = await memory.search(SearchMemoryRequest(query="coffee", mode="hybrid"))
        assert all(h.entry_id != hit.entry_id for h in page.hits)


async def test_a_batch_of_ten_thousand_is_one_revision_and_searchable(url: str) -> None:
    async with open_runtime(settings(url, "none")) as rt:
        memory = rt.memory.for_scope("bulk")
        batch = [RememberMemoryRequest(text=f"note {i} about topic{i % 50}") for i in range(10_000)]
        result = await memory.remember_many(batch)
        assert result.memory_ref.revision == 1 and len(result.entries) == 10_000
        page = await memory.search(SearchMemoryRequest(query="topic7", limit=100))
        assert page.mode == "fts" and len(page.hits) == 100
        assert all("topic7 " in h.text + " " for h in page.hits)


async def test_a_new_profile_waits_for_reindex(url: str) -> None:
    async with open_runtime(settings(url, "none")) as rt:
        await rt.memory.for_scope("project").remember_many(
            [RememberMemoryRequest(text=t) for t in FACTS]
        )
    manual = settings(url)
    manual.runtime.vector_backfill_interval_seconds = 0  # else the backfill fills them itself
    async with open_runtime(manual) as rt:
        memory = rt.memory.for_scope("project")
        assert (await memory.search(SearchMemoryRequest(query="tea"))).mode == "fts"
        assert await memory.pending_vectors() == len(FACTS)
        assert await rt.reindex() == {"project": len(FACTS)}
        assert (await memory.search(SearchMemoryRequest(query="tea"))).mode == "hybrid"


async def test_turn_by_turn_writes_search_like_one_batch(url: str) -> None:
    """Contextual indexing by thread on PostgreSQL: the earlier turns' tokens (and the term
    statistics) are brought up to date by later turns, as one batch would have set them."""
    turns = [
        ("s1", "Did you finally go on the canoe trip?"),
        ("s1", "Yes, and the lake was freezing."),
        ("s2", "The quarterly report is due on Monday."),
        ("s1", "Next time we bring wetsuits."),
        ("s2", "Marketing wants the numbers first."),
    ]
    requests = [
        RememberMemoryRequest(text=text, thread=thread, metadata={"i": i})
        for i, (thread, text) in enumerate(turns)
    ]

    async def ranked(scope: str) -> list[list[tuple[int, float]]]:
        memory = rt.memory.for_scope(scope)
        out = []
        for query in ("canoe", "freezing wetsuits", "numbers report"):
            for mode in ("fts", "hybrid"):
                page = await memory.search(SearchMemoryRequest(query=query, mode=mode))
                out.append([(h.metadata["i"], round(h.score, 9)) for h in page.hits])
        return out

    async with open_runtime(settings(url)) as rt:
        await rt.memory.for_scope("batch").remember_many(requests)
        for request in requests:
            await rt.memory.for_scope("turns").remember(request)
        assert await ranked("turns") == await ranked("batch")
        page = await rt.memory.for_scope("turns").search(
            SearchMemoryRequest(query="freezing", mode="fts")
        )
        assert {hit.metadata["i"] for hit in page.hits} == {0, 1, 3}


async def test_closing_does_not_wait_for_the_backfill_interval(url: str) -> None:
    """The backfill's first pass is still reading when the block ends: psycopg answers the
    cancelled query with an error, which the loop must not take for an outage to retry
    (closing then waited out the 30 s interval, and its backoff, for good)."""
    import asyncio
    import contextlib
    import time

    async with open_runtime(settings(url)) as runtime:
        await runtime.memory.for_scope("close").remember(RememberMemoryRequest(text="x"))

    async def open_read_close() -> None:
        async with open_runtime(settings(url)) as runtime:
            await runtime.memory.for_scope("close").head()

    for _ in range(2):
        started = time.monotonic()
        # Bounded, so the test fails instead of hanging; the bound's cancel may be swallowed.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(open_read_close(), 15)
        assert time.monotonic() - started < 10
