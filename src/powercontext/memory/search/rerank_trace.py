"""Stage 6: what a reranker's decision means for the page, and the trace that records it."""

from __future__ import annotations

import logging

from powercontext.memory.models import MemoryHit, MemoryRerankDecision, MemoryRerankTrace
from powercontext.memory.search.candidates import CandidateChoice
from powercontext.memory.search.ranks import normalize_ranks
from powercontext.memory.values import RerankStatus

rerank_log = logging.getLogger("powercontext.memory.rerank")


def rerank_trace(
    decision: MemoryRerankDecision,
    pool: tuple[MemoryHit, ...],
    limit: int,
    *,
    policy_id: str,
    choice: CandidateChoice,
    latency_ms: float,
) -> MemoryRerankTrace:
    """The trace of one rerank: the normalized selection (RFC rules), or the coarse first
    `limit` when a fail-open guard degraded the decision."""
    status: RerankStatus
    if decision.degraded:
        # The guard already chose the coarse first k; nothing the provider said is normalized.
        selected: tuple[int, ...] = tuple(range(1, min(limit, len(pool)) + 1))
        discarded: tuple[int, ...] = ()
        used_fallback = False
        status = (
            "degraded_invalid_output"
            if decision.degraded_cause == "invalid_output"
            else "degraded_provider_error"
        )
    else:
        selection = normalize_ranks(decision.selected_ranks, len(pool), limit)
        selected, discarded, used_fallback = (
            selection.selected,
            selection.discarded,
            selection.used_fallback,
        )
        status = "fallback_no_valid_rank" if used_fallback else "applied"
    return MemoryRerankTrace(
        policy_id=policy_id,
        candidate_hits=pool,
        selected_ranks=selected,
        discarded_rank_count=len(discarded),
        discarded_ranks=discarded,
        used_fallback=used_fallback,
        latency_ms=latency_ms,
        usage=decision.usage,
        truncated_ranks=decision.truncated_ranks,
        rerank_status=status,
        cache_hit=decision.cache_hit,
        candidate_policy_id=choice.policy_id,
        query_class=choice.query_class,
        candidate_limit=choice.candidate_limit,
    )


def log_rerank(trace: MemoryRerankTrace, degraded: bool) -> None:
    """One log record per rerank; a degraded one is a warning."""
    log = rerank_log.warning if degraded else rerank_log.info
    log(
        "memory rerank",
        extra={
            "policy_id": trace.policy_id,
            "rerank_status": trace.rerank_status,
            "cache_hit": trace.cache_hit,
            "candidate_count": len(trace.candidate_hits),
            "candidate_policy_id": trace.candidate_policy_id,
            "query_class": trace.query_class,
            "selected_count": len(trace.selected_ranks),
            "discarded_count": trace.discarded_rank_count,
            "used_fallback": trace.used_fallback,
            "latency_ms": round(trace.latency_ms, 3),
            "requests": trace.usage.requests,
            "input_tokens": trace.usage.input_tokens,
            "output_tokens": trace.usage.output_tokens,
            "documents": trace.usage.documents,
        },
    )
