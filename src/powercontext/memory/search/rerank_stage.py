"""The rerank stage: one reranker call over the coarse pool, its trace, and the pool's own hits
resolved from the normalized ranks (the model never names an entry, so it cannot invent one)."""

from __future__ import annotations

import time

from powercontext.memory.models import MemoryHit, MemoryRerankTrace, SearchMemoryRequest
from powercontext.memory.ports import MemoryReranker
from powercontext.memory.rerank.guard import call_reranker
from powercontext.memory.search.candidates import CandidateChoice
from powercontext.memory.search.ranks import resolve
from powercontext.memory.search.rerank_trace import log_rerank, rerank_trace


async def rerank(
    reranker: MemoryReranker,
    request: SearchMemoryRequest,
    pool: tuple[MemoryHit, ...],
    choice: CandidateChoice,
) -> tuple[tuple[MemoryHit, ...], MemoryRerankTrace]:
    """One reranker call, no lock held; inference errors propagate (fail-closed) unless a
    GuardedReranker configured for fail-open turned an outage into a degraded decision."""
    started = time.perf_counter()
    decision = await call_reranker(reranker, request.query, pool, request.limit)
    trace = rerank_trace(
        decision,
        pool,
        request.limit,
        policy_id=reranker.policy_id,
        choice=choice,
        latency_ms=(time.perf_counter() - started) * 1000.0,
    )
    log_rerank(trace, decision.degraded)
    return resolve(pool, trace.selected_ranks), trace
