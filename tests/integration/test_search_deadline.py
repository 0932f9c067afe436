"""The search deadline: the rerank stage ends before it, so fail-open serves in time."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.memory import InferenceTimeoutError
from powercontext.memory.rerank.deadline import (
    FALLBACK_RESERVE_SECONDS,
    rerank_deadline,
    search_deadline,
)
from powercontext.memory.rerank.guard import GuardedReranker
from tests.integration.conftest import sqlite_settings
from tests.integration.test_rerank_guard import QUERY, _seed, faulty

# The provider would take this long; every bound below is far under it, so a pass cannot
# come from the provider answering in time.
SLOW = 30.0


async def test_fail_open_serves_the_coarse_page_inside_the_search_deadline(db_path: Path) -> None:
    settings = sqlite_settings(
        db_path, search_timeout_seconds=0.5, memory_rerank_failure_policy="fail_open"
    )
    slow = faulty(delay=SLOW)
    async with open_runtime(settings, memory_reranker=slow) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        started = time.perf_counter()
        page = await memory.search(QUERY)
        elapsed = time.perf_counter() - started
    assert page.rerank_status == "degraded_provider_error"
    assert page.rerank is not None and page.hits == page.rerank.candidate_hits[:3]
    assert len(slow.calls) == 1
    assert elapsed < 0.5 + 1.0  # generous: the provider alone would take 30 s


async def test_fail_closed_search_deadline_is_a_timeout_error(db_path: Path) -> None:
    settings = sqlite_settings(db_path, search_timeout_seconds=0.3)
    async with open_runtime(settings, memory_reranker=faulty(delay=SLOW)) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        with pytest.raises(InferenceTimeoutError, match="the search deadline"):
            await memory.search(QUERY)


async def test_the_earlier_of_the_two_deadlines_wins(db_path: Path) -> None:
    # The rerank's own deadline (20 s) is later than the search's (0.3 s): the search's cuts.
    settings = sqlite_settings(
        db_path, search_timeout_seconds=0.3, memory_rerank_timeout_seconds=20
    )
    async with open_runtime(settings, memory_reranker=faulty(delay=SLOW)) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        with pytest.raises(InferenceTimeoutError, match="the search deadline"):
            await memory.search(QUERY)
    # And the other way round: the rerank's own 0.2 s ends before a 20 s search deadline.
    settings = sqlite_settings(
        db_path, search_timeout_seconds=20, memory_rerank_timeout_seconds=0.2
    )
    async with open_runtime(settings, memory_reranker=faulty(delay=SLOW)) as rt:
        with pytest.raises(InferenceTimeoutError, match=r"its deadline of 0\.2s"):
            await rt.memory.for_scope("p").search(QUERY)


async def test_no_time_left_skips_the_provider() -> None:
    # A deadline inside the reserve: asking the provider could only make the page late.
    slow = faulty(delay=SLOW)
    guard = GuardedReranker(slow, failure_policy="fail_open")
    now = asyncio.get_running_loop().time()
    with search_deadline(now + FALLBACK_RESERVE_SECONDS / 2):
        decision = await guard.rerank("q", (), 3)
    assert decision.degraded and len(slow.calls) == 0
    closed = GuardedReranker(slow)
    with search_deadline(now), pytest.raises(InferenceTimeoutError, match="no time left"):
        await closed.rerank("q", (), 3)
    assert len(slow.calls) == 0


async def test_without_a_search_deadline_nothing_changes_and_searches_do_not_share_one() -> None:
    assert rerank_deadline(None) == (None, "")

    async def seen(at: float | None) -> float | None:
        with search_deadline(at):
            await asyncio.sleep(0.01)
            return rerank_deadline(None)[0]

    now = asyncio.get_running_loop().time()
    first, second, none = await asyncio.gather(seen(now + 5), seen(now + 9), seen(None))
    assert first == pytest.approx(now + 5 - FALLBACK_RESERVE_SECONDS)
    assert second == pytest.approx(now + 9 - FALLBACK_RESERVE_SECONDS)
    assert none is None


async def test_a_search_deadline_alone_leaves_a_quick_rerank_applied(db_path: Path) -> None:
    settings = sqlite_settings(db_path, search_timeout_seconds=10)
    async with open_runtime(settings, memory_reranker=faulty()) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        page = await memory.search(QUERY)
    assert page.rerank_status == "applied"
    assert page.rerank is not None and page.rerank.selected_ranks[0] == len(
        page.rerank.candidate_hits
    )
