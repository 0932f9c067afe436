"""The Memory core through open_runtime on a real SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError

from powercontext import Runtime, open_runtime
from powercontext.memory import (
    CapabilityNotSupportedError,
    MemoryValidationError,
    NotFoundError,
    PayloadTooLargeError,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    RevisionConflictError,
    SearchMemoryRequest,
)
from powercontext.testing import FakeEmbedder
from tests.integration.conftest import sqlite_settings

FACTS = [
    "We deploy the billing service on Fridays after the freeze.",
    "Alice prefers tea over coffee in the morning.",
    "The staging database moved to PostgreSQL 16 in March.",
    "Decision: the API keeps JSON over POST for every route.",
]


async def _seed(runtime: Runtime, scope: str = "project") -> list[str]:
    memory = runtime.memory.for_scope(scope)
    result = await memory.remember_many([RememberMemoryRequest(kind="fact", text=t) for t in FACTS])
    assert result.memory_ref.revision == 1
    return [entry.entry_id for entry in result.entries]


async def test_remember_and_search_every_mode(runtime: Runtime) -> None:
    await _seed(runtime)
    memory = runtime.memory.for_scope("project")
    for mode in ("fts", "vector", "hybrid", "auto"):
        page = await memory.search(
            SearchMemoryRequest(query="when do we deploy billing", mode=mode)
        )
        assert page.hits, mode
        assert "deploy" in page.hits[0].text
        assert page.mode == ("hybrid" if mode == "auto" else mode)
        assert page.rerank is None
        assert page.memory_ref is not None and page.memory_ref.revision == 1


async def test_single_channel_rank_one_scores_one_over_k_plus_1(runtime: Runtime) -> None:
    await _seed(runtime)
    page = await runtime.memory.for_scope("project").search(
        SearchMemoryRequest(query="tea", mode="fts")
    )
    assert page.hits[0].score == 1 / (runtime.settings.runtime.search_rrf_k + 1)
    assert page.hits[0].matched_by == ("fts",)


async def test_empty_scope_searches_cleanly(runtime: Runtime) -> None:
    page = await runtime.memory.for_scope("nobody").search(SearchMemoryRequest(query="x"))
    assert page.hits == () and page.memory_ref is None


async def test_revise_retire_and_exact_citations(runtime: Runtime) -> None:
    await _seed(runtime)
    memory = runtime.memory.for_scope("project")
    (hit,) = (await memory.search(SearchMemoryRequest(query="tea coffee", mode="fts"))).hits[:1]
    old = hit.citation
    revised = await memory.revise(
        ReviseMemoryRequest(citation=old, text="Alice now prefers coffee.", reason="changed")
    )
    assert revised.memory_ref.revision == 2
    new = revised.entries[0]
    assert new.entry_id == old.entry_id and new.version == 2
    # the old citation still resolves exactly, forever
    got = await memory.get(old)
    assert got is not None and got.text == FACTS[1] and not got.active
    # revising from a stale citation loses the entry-level CAS
    with pytest.raises(RevisionConflictError):
        await memory.revise(ReviseMemoryRequest(citation=old, text="again"))
    await memory.retire(RetireMemoryRequest(citation=new.citation))
    page = await memory.search(SearchMemoryRequest(query="coffee", mode="fts"))
    assert all(h.entry_id != old.entry_id for h in page.hits)
    ops = [c.op for c in (await memory.changes()).changes]
    assert ops == ["add"] * 4 + ["revise", "retire"]
    with pytest.raises(NotFoundError):
        await memory.retire(RetireMemoryRequest(citation=new.citation))


async def test_old_revision_listing_is_exact(runtime: Runtime) -> None:
    await _seed(runtime)
    memory = runtime.memory.for_scope("project")
    first = (await memory.list()).entries[0]
    await memory.retire(RetireMemoryRequest(citation=first.citation))
    assert len((await memory.list()).entries) == 3
    assert len((await memory.list(revision=1)).entries) == 4


async def test_expected_revision_is_a_compare_and_swap(runtime: Runtime) -> None:
    memory = runtime.memory.for_scope("cas")
    await memory.remember(RememberMemoryRequest(text="one", expected_revision=0))
    with pytest.raises(RevisionConflictError):
        await memory.remember(RememberMemoryRequest(text="two", expected_revision=0))
    ok = await memory.remember(RememberMemoryRequest(text="two", expected_revision=1))
    assert ok.memory_ref.revision == 2


async def test_concurrent_writers_in_one_process_each_get_a_revision(runtime: Runtime) -> None:
    memory = runtime.memory.for_scope("busy")
    results = await asyncio.gather(
        *(memory.remember(RememberMemoryRequest(text=f"note {i}")) for i in range(20))
    )
    assert sorted(r.memory_ref.revision for r in results) == list(range(1, 21))


async def test_persistence_across_close_and_reopen(db_path: Path) -> None:
    async with open_runtime(sqlite_settings(db_path, "hash")) as rt:
        await _seed(rt)
    async with open_runtime(sqlite_settings(db_path, "hash")) as rt:
        page = await rt.memory.for_scope("project").search(
            SearchMemoryRequest(query="PostgreSQL staging", mode="hybrid")
        )
        assert "PostgreSQL" in page.hits[0].text


async def test_explicit_vector_without_embedder_is_refused(db_path: Path) -> None:
    async with open_runtime(sqlite_settings(db_path, "none")) as rt:
        await _seed(rt)
        memory = rt.memory.for_scope("project")
        with pytest.raises(CapabilityNotSupportedError, match="EMBEDDING_MODEL"):
            await memory.search(SearchMemoryRequest(query="tea", mode="vector"))
        assert (await memory.search(SearchMemoryRequest(query="tea"))).mode == "fts"


async def test_new_profile_makes_vectors_stale_until_reindex(db_path: Path) -> None:
    async with open_runtime(sqlite_settings(db_path, "none")) as rt:
        await _seed(rt)
    # With the background backfill off; with it on it fills them (test_vector_backfill.py).
    manual = sqlite_settings(db_path, "hash", vector_backfill_interval_seconds=0)
    async with open_runtime(manual) as rt:
        memory = rt.memory.for_scope("project")
        assert (await memory.search(SearchMemoryRequest(query="tea"))).mode == "fts"
        with pytest.raises(CapabilityNotSupportedError, match="reindex"):
            await memory.search(SearchMemoryRequest(query="tea", mode="hybrid"))
        seen: list[tuple[str, int, int]] = []
        counts = await rt.reindex(lambda scope, done, total: seen.append((scope, done, total)))
        assert counts == {"project": 4} and seen[-1] == ("project", 4, 4)
        assert (await memory.search(SearchMemoryRequest(query="tea"))).mode == "hybrid"


async def test_embedding_failure_never_loses_the_text(db_path: Path) -> None:
    failing = FakeEmbedder(fail_documents=True, fail_queries=True)
    async with open_runtime(sqlite_settings(db_path), embedding_model=failing) as rt:
        memory = rt.memory.for_scope("p")
        result = await memory.remember(RememberMemoryRequest(text="kept despite the outage"))
        assert result.vectors_pending == 1
        page = await memory.search(SearchMemoryRequest(query="outage"))
        assert page.mode == "fts" and page.hits[0].text == "kept despite the outage"
        with pytest.raises(CapabilityNotSupportedError):
            await memory.search(SearchMemoryRequest(query="outage", mode="vector"))


async def test_query_embedding_failure_in_explicit_mode_is_a_capability_error(
    db_path: Path,
) -> None:
    from powercontext.inference.embeddings.hashing import HashingEmbedder

    good = HashingEmbedder()
    async with open_runtime(sqlite_settings(db_path), embedding_model=good) as rt:
        await _seed(rt)
    failing = FakeEmbedder(fail_documents=True, fail_queries=True)
    async with open_runtime(sqlite_settings(db_path), embedding_model=failing) as rt:
        memory = rt.memory.for_scope("project")
        with pytest.raises(CapabilityNotSupportedError, match="ConnectionError") as info:
            await memory.search(SearchMemoryRequest(query="tea", mode="hybrid"))
        assert isinstance(info.value.__cause__, ConnectionError)
        assert (await memory.search(SearchMemoryRequest(query="tea"))).mode == "fts"


@pytest.mark.parametrize(
    "query",
    ['"', "*", "NEAR(", "OR", "-", ":", 'a" OR "b', "NOT x", "^", "col:val", "🎉", "中文", "()"],
)
async def test_fts_syntax_and_unicode_queries_never_crash(runtime: Runtime, query: str) -> None:
    memory = runtime.memory.for_scope("syntax")
    await memory.remember_many(
        [
            RememberMemoryRequest(text=t)
            for t in ["中文检索很好用", "OR gates and NEAR fields", "🎉"]
        ]
    )
    page = await memory.search(SearchMemoryRequest(query=query, mode="fts"))
    assert len(page.hits) <= 10


async def test_cjk_search_finds_chinese_and_japanese(runtime: Runtime) -> None:
    memory = runtime.memory.for_scope("cjk")
    await memory.remember_many(
        [
            RememberMemoryRequest(text=t)
            for t in ["我们周五部署服务", "東京で会議があります", "plain"]
        ]
    )
    zh = await memory.search(SearchMemoryRequest(query="部署", mode="fts"))
    ja = await memory.search(SearchMemoryRequest(query="会議", mode="fts"))
    assert zh.hits[0].text == "我们周五部署服务" and ja.hits[0].text == "東京で会議があります"


async def test_bad_input_is_a_validation_error(runtime: Runtime) -> None:
    with pytest.raises(ValidationError):
        SearchMemoryRequest(query="a\x00")
    with pytest.raises(MemoryValidationError):
        runtime.memory.for_scope("   ")
    with pytest.raises(MemoryValidationError):
        await runtime.memory.for_scope("s").remember_many([])


async def test_batch_bound_is_configurable(db_path: Path) -> None:
    async with open_runtime(sqlite_settings(db_path, max_batch_entries=3)) as rt:
        with pytest.raises(PayloadTooLargeError, match="MAX_BATCH_ENTRIES"):
            await rt.memory.for_scope("s").remember_many(
                [RememberMemoryRequest(text=f"t{i}") for i in range(4)]
            )


async def test_ten_thousand_entries_in_one_revision(db_path: Path) -> None:
    async with open_runtime(sqlite_settings(db_path, "none")) as rt:
        memory = rt.memory.for_scope("bulk")
        result = await memory.remember_many(
            [
                RememberMemoryRequest(text=f"entry number {i} about topic {i % 97}")
                for i in range(10_000)
            ]
        )
        assert result.memory_ref.revision == 1 and len(result.entries) == 10_000
        page = await memory.search(SearchMemoryRequest(query="topic 42", limit=100, mode="fts"))
        assert len(page.hits) == 100
