"""The rerank guard: deadline, failure policy and cache around any MemoryReranker.

Pure domain code. The guard is itself a MemoryReranker with the inner policy's id, so the
search pipeline sees one port; what the guard did travels back in the decision's `degraded`
and `cache_hit` fields and ends up in the trace. Without a deadline, with `fail_closed` and no
cache, composition does not wrap at all, so the RFC's behaviour stays exactly as it was.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import ValidationError

from powercontext.memory.bounds import positive
from powercontext.memory.errors import (
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
)
from powercontext.memory.models import InferenceUsage, MemoryHit, MemoryRerankDecision
from powercontext.memory.ports import MemoryReranker
from powercontext.memory.rerank.cache import RerankCache
from powercontext.memory.rerank.deadline import rerank_deadline
from powercontext.memory.values import DegradedCause

FailurePolicy = Literal["fail_closed", "fail_open"]

# A provider that did not answer, or not in time, is an outage. Output that stayed invalid is
# served degraded too under fail_open: the candidates' own text reaches the model, so one
# poisoned entry could otherwise fail every search that pools it. It is told apart
# (`degraded_invalid_output`, logged as a warning) so a broken model is not hidden.
_OUTAGES = (InferenceTimeoutError, InferenceUnavailableError)


async def call_reranker(
    reranker: MemoryReranker, query: str, candidates: tuple[MemoryHit, ...], limit: int
) -> MemoryRerankDecision:
    """`reranker.rerank(...)`, where a decision the reranker could not build (a rank of `true`,
    "2" or 2.5: MemoryRerankDecision takes strict ints) is the reranker's invalid output. Left
    alone, pydantic's ValidationError would reach an HTTP caller as a 422 on their request."""
    try:
        return await reranker.rerank(query, candidates, limit)
    except ValidationError as exc:
        # Never the error's text: it quotes the offending values.
        raise InvalidInferenceOutputError(
            f"memory rerank: {reranker.policy_id} returned ranks that are not integers"
        ) from exc


def coarse_decision(
    candidate_count: int, limit: int, cause: DegradedCause = "provider_error"
) -> MemoryRerankDecision:
    """The fail-open answer: the coarse first k, marked degraded with its cause."""
    return MemoryRerankDecision(
        selected_ranks=tuple(range(1, min(limit, candidate_count) + 1)),
        degraded=True,
        degraded_cause=cause,
    )


class GuardedReranker:
    """Wraps `inner` with an optional deadline, a failure policy and an optional cache.

    `timeout_seconds` bounds the whole inner call (all its requests and retries), and so does
    the search's own deadline when it has one (see `deadline.py`), whichever ends first; on
    expiry the call is cancelled and counts as an InferenceTimeoutError, so under `fail_open`
    the coarse order is served in time rather than after the provider's own timeout.
    """

    def __init__(
        self,
        inner: MemoryReranker,
        *,
        failure_policy: FailurePolicy = "fail_closed",
        timeout_seconds: float | None = None,
        cache: RerankCache | None = None,
    ) -> None:
        if failure_policy not in ("fail_closed", "fail_open"):
            raise ValueError(f"unknown failure policy {failure_policy!r}")
        if timeout_seconds is not None:
            positive("timeout_seconds", timeout_seconds)
        self.inner = inner
        # The guard decides nothing itself: the trace names the inner policy.
        self.policy_id: str = inner.policy_id
        self.failure_policy: FailurePolicy = failure_policy
        self.timeout_seconds = timeout_seconds
        self.cache = cache

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        key = None
        if self.cache is not None:
            key = self.cache.key(self.policy_id, query, candidates, limit)
            cached = self.cache.get(key)
            if cached is not None:
                # No provider call now: usage is this search's (none), not the first one's.
                return cached.model_copy(update={"cache_hit": True, "usage": InferenceUsage()})
        try:
            decision = await self._call(query, candidates, limit)
        except _OUTAGES:
            if self.failure_policy == "fail_open":
                return coarse_decision(len(candidates), limit)
            raise
        except InvalidInferenceOutputError:
            if self.failure_policy == "fail_open":
                return coarse_decision(len(candidates), limit, "invalid_output")
            raise
        if key is not None and self.cache is not None:
            self.cache.put(key, decision)
        return decision

    async def _call(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        deadline, which = rerank_deadline(self.timeout_seconds)
        if deadline is None:
            return await call_reranker(self.inner, query, candidates, limit)
        if deadline <= asyncio.get_running_loop().time():
            # The coarse stages used up the search's budget: asking the provider now could
            # only make the page late.
            raise InferenceTimeoutError(f"memory rerank had no time left before {which}")
        try:
            async with asyncio.timeout_at(deadline):
                return await call_reranker(self.inner, query, candidates, limit)
        except TimeoutError as exc:
            raise InferenceTimeoutError(f"memory rerank exceeded {which}") from exc
