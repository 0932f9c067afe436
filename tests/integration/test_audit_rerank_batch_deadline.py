"""A batch search is one call with one deadline (docs/rerank.md, Latency budget).

The audit found docs/rerank.md saying that concurrent searches "never share" a deadline while
the searches of a batch do share theirs, and reranks queued for the batch's slots spend it.
This holds the documented example: 6 searches, a 0.4 s reranker, 2 slots, a 1 s deadline.
"""

from __future__ import annotations

from pathlib import Path

from powercontext import open_runtime
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.testing import ScriptedReranker
from tests.integration.conftest import sqlite_settings


async def test_the_searches_of_a_batch_share_one_deadline(tmp_path: Path) -> None:
    settings = sqlite_settings(
        tmp_path / "deadline.db",
        search_timeout_seconds=1.0,
        memory_rerank_failure_policy="fail_open",
    )
    assert settings.inference.generation_max_requests == 2  # the batch's rerank slots
    reranker = ScriptedReranker(ranks=[2], delay=0.4)
    async with open_runtime(settings, memory_reranker=reranker) as runtime:
        memory = runtime.memory.for_scope("s")
        await memory.remember_many(
            [RememberMemoryRequest(kind="note", text=f"deploy note {i}") for i in range(5)]
        )
        # Six different searches: a search repeated within a batch is reranked once.
        requests = [SearchMemoryRequest(query=f"deploy note {i}", limit=3) for i in range(6)]
        alone = await memory.search(requests[0])
        pages = await memory.search_batch(requests)
    assert alone.rerank_status == "applied"
    statuses = [page.rerank_status for page in pages]
    # The first pair answers at 0.4 s; the third starts at 0.8 s and would end at 1.2 s, past
    # the shared deadline (less its 50 ms reserve), so it is served coarse.
    assert statuses[:2] == ["applied", "applied"]
    assert statuses[4:] == ["degraded_provider_error", "degraded_provider_error"]
    assert all(len(page.hits) == 3 for page in pages[4:])
