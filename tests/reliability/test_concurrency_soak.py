"""A reduced soak (bench/soak.py): 200 searches from 32 tasks, a 20-50 ms reranker, 2 writers.

The full run (1,000 searches) is tests/soak/ (opt-in) and `python bench/soak.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.memory import MemorySearchPage, RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.models import MemoryRef
from tests.reliability.bench_scripts import load

soak = load("soak")


async def test_reduced_soak_has_no_errors_and_exact_citations(tmp_path: Path) -> None:
    figures = await soak.soak(f"sqlite:///{tmp_path / 'soak.db'}", searches=200, tasks=32)
    assert figures["error_count"] == 0, figures["errors"]
    assert figures["searches"] == figures["rerank_calls"] == 200
    assert figures["hits_checked"] >= 200
    assert figures["writes_during_soak"] > 0
    # The writers moved the head while the searches ran, and the searches saw it move.
    assert figures["distinct_revisions_searched"] > 1


async def test_the_page_checks_catch_a_mixed_page(tmp_path: Path) -> None:
    """_check_page is not vacuous: a page that mixes revisions, or a hit that is not in the
    trace, or a citation of a version not active at the page's revision, is reported."""
    from powercontext import open_runtime

    url = f"sqlite:///{tmp_path / 'check.db'}"
    reranker = soak.SlowReranker(0.0, 0.0, seed=1)
    settings = soak.ServerSettings(
        database=soak.DatabaseConfig(url=url),
        inference=soak.InferenceConfig(embedding_model="none"),
    )
    async with open_runtime(settings, memory_reranker=reranker) as runtime:
        memory = runtime.memory.for_scope(soak.SCOPE)
        await memory.remember_many(
            [RememberMemoryRequest(text=f"deploy note {i}") for i in range(5)]
        )
        written = await memory.remember(RememberMemoryRequest(text="deploy later note"))
        page = await memory.search(SearchMemoryRequest(query="deploy", limit=5))
        await soak._check_page(memory, runtime.store, page, soak.Figures())  # a good page passes
        assert page.rerank is not None and page.hits

        old = MemoryRef(scope_id=soak.SCOPE, revision=1)
        mixed = page.model_copy(
            update={"hits": (page.hits[0].model_copy(update={"memory_ref": old}),)}
        )
        foreign = page.model_copy(update={"hits": (page.hits[0].model_copy(),)})
        early = MemorySearchPage(
            memory_ref=old,
            mode=page.mode,
            hits=tuple(h.model_copy(update={"memory_ref": old}) for h in page.hits),
            rerank=page.rerank.model_copy(
                update={
                    "candidate_hits": tuple(
                        h.model_copy(update={"memory_ref": old}) for h in page.rerank.candidate_hits
                    )
                }
            ),
        )
        early = early.model_copy(update={"hits": early.rerank.candidate_hits})  # type: ignore[union-attr]
        assert any(h.entry_version_id == written.entries[0].entry_version_id for h in early.hits)
        for bad in (mixed, foreign, early):
            with pytest.raises(AssertionError):
                await soak._check_page(memory, runtime.store, bad, soak.Figures())
