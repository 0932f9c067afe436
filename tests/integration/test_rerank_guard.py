"""Fail-open, the rerank deadline and the rerank cache through open_runtime on real SQLite."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.memory import (
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
    RememberMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.models import InferenceUsage
from powercontext.memory.rerank.guard import GuardedReranker
from powercontext.testing import ScriptedReranker
from tests.integration.conftest import sqlite_settings

_FAILURES = {
    "timeout": InferenceTimeoutError("provider timed out"),
    "unavailable": InferenceUnavailableError("provider answered HTTP 503"),
    "invalid": InvalidInferenceOutputError("garbage"),
}


def faulty(mode: str = "ok", delay: float = 0.0) -> ScriptedReranker:
    """Reverses the pool, or fails as `mode` says: timeout, unavailable, invalid, empty."""
    return ScriptedReranker(
        () if mode == "empty" else None,
        error=_FAILURES.get(mode),
        delay=delay,
        policy_id="tests.faulty.v1",
    )


async def _seed(memory: object) -> None:
    await memory.remember_many(  # type: ignore[attr-defined]
        [RememberMemoryRequest(text=f"deployment note {i} for service {i % 5}") for i in range(12)]
    )


QUERY = SearchMemoryRequest(query="deployment service", limit=3)


@pytest.mark.parametrize("mode", ["timeout", "unavailable"])
async def test_fail_open_serves_the_coarse_first_k_marked_degraded(
    db_path: Path, mode: str
) -> None:
    settings = sqlite_settings(db_path, memory_rerank_failure_policy="fail_open")
    async with open_runtime(settings, memory_reranker=faulty(mode)) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        page = await memory.search(QUERY)
    trace = page.rerank
    assert trace is not None and page.rerank_status == "degraded_provider_error"
    assert trace.rerank_status == "degraded_provider_error" and not trace.used_fallback
    assert trace.selected_ranks == (1, 2, 3)
    assert page.hits == trace.candidate_hits[:3]  # the pool's own objects, coarse order
    assert trace.policy_id == "tests.faulty.v1"


@pytest.mark.parametrize(
    ("mode", "error"),
    [("timeout", InferenceTimeoutError), ("unavailable", InferenceUnavailableError)],
)
async def test_fail_closed_default_raises_as_before(
    db_path: Path, mode: str, error: type[Exception]
) -> None:
    reranker = faulty(mode)
    async with open_runtime(sqlite_settings(db_path), memory_reranker=reranker) as rt:
        assert rt.memory_reranker is reranker  # defaults: not even wrapped
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        with pytest.raises(error):
            await memory.search(QUERY)


async def test_invalid_output_is_served_degraded_under_fail_open(db_path: Path) -> None:
    settings = sqlite_settings(db_path, memory_rerank_failure_policy="fail_open")
    async with open_runtime(settings, memory_reranker=faulty("invalid")) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        page = await memory.search(QUERY)
    trace = page.rerank
    assert trace is not None and page.rerank_status == "degraded_invalid_output"
    assert trace.selected_ranks == (1, 2, 3) and page.hits == trace.candidate_hits[:3]


async def test_invalid_output_stays_fail_closed_by_default(db_path: Path) -> None:
    async with open_runtime(sqlite_settings(db_path), memory_reranker=faulty("invalid")) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        with pytest.raises(InvalidInferenceOutputError):
            await memory.search(QUERY)


async def test_statuses_applied_and_no_valid_rank(db_path: Path) -> None:
    async with open_runtime(sqlite_settings(db_path), memory_reranker=faulty()) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        applied = await memory.search(QUERY)
        rt.memory.reranker = faulty("empty")
        fallback = await memory.search(QUERY)
        empty = await memory.search(SearchMemoryRequest(query="zebra", limit=3))
    assert applied.rerank_status == "applied" and applied.rerank is not None
    assert applied.rerank.selected_ranks == (12, 11, 10)
    assert fallback.rerank_status == "fallback_no_valid_rank"
    assert fallback.rerank is not None and fallback.rerank.used_fallback
    assert empty.rerank is None and empty.rerank_status == "disabled"


async def test_deadline_cuts_a_slow_provider(db_path: Path) -> None:
    slow = faulty(delay=5.0)
    closed = sqlite_settings(db_path, memory_rerank_timeout_seconds=0.2)
    async with open_runtime(closed, memory_reranker=slow) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        started = time.perf_counter()
        with pytest.raises(InferenceTimeoutError, match="deadline"):
            await memory.search(QUERY)
        assert time.perf_counter() - started < 2.0
    opened = sqlite_settings(
        db_path, memory_rerank_timeout_seconds=0.2, memory_rerank_failure_policy="fail_open"
    )
    async with open_runtime(opened, memory_reranker=slow) as rt:
        started = time.perf_counter()
        page = await rt.memory.for_scope("p").search(QUERY)
        elapsed = time.perf_counter() - started
    assert page.rerank_status == "degraded_provider_error" and elapsed < 2.0
    assert page.rerank is not None and 150 <= page.rerank.latency_ms < 2000


async def test_cache_reuses_a_decision_until_the_pool_changes(db_path: Path) -> None:
    inner = faulty(delay=0.05)
    settings = sqlite_settings(db_path, memory_rerank_cache_ttl_seconds=60)
    async with open_runtime(settings, memory_reranker=inner) as rt:
        assert isinstance(rt.memory_reranker, GuardedReranker)
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        first = await memory.search(QUERY)
        second = await memory.search(QUERY)
        other_limit = await memory.search(SearchMemoryRequest(query=QUERY.query, limit=2))
        await memory.remember(RememberMemoryRequest(text="deployment service outage"))
        after_write = await memory.search(QUERY)
    assert first.rerank is not None and second.rerank is not None
    assert not first.rerank.cache_hit and second.rerank.cache_hit
    assert first.rerank.usage.requests == 1 and second.rerank.usage == InferenceUsage()
    assert second.rerank.latency_ms < first.rerank.latency_ms
    assert [h.entry_version_id for h in second.hits] == [h.entry_version_id for h in first.hits]
    assert other_limit.rerank is not None and not other_limit.rerank.cache_hit
    assert after_write.rerank is not None and not after_write.rerank.cache_hit
    assert len(inner.calls) == 3


@pytest.mark.parametrize("mode", ["unavailable", "invalid"])
async def test_degraded_decisions_are_not_cached(db_path: Path, mode: str) -> None:
    inner = faulty(mode)
    settings = sqlite_settings(
        db_path, memory_rerank_cache_ttl_seconds=60, memory_rerank_failure_policy="fail_open"
    )
    async with open_runtime(settings, memory_reranker=inner) as rt:
        memory = rt.memory.for_scope("p")
        await _seed(memory)
        await memory.search(QUERY)
        inner.error = None
        page = await memory.search(QUERY)
    assert page.rerank_status == "applied" and page.rerank is not None
    assert not page.rerank.cache_hit and len(inner.calls) == 2
