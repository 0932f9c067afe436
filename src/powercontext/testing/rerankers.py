"""Scripted rerankers: real `MemoryReranker`s whose answers a test decides.

`ScriptedReranker` answers the ranks (or raises the error) it was given; a test of the rerank
stage in-process uses it. `QueryScriptedReranker` lets the query pick the behaviour, for a
server under test whose reranker the test cannot reach between requests.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from powercontext.memory.errors import (
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
)
from powercontext.memory.models import InferenceUsage, MemoryHit, MemoryRerankDecision


class ScriptedReranker:
    """Selects `ranks` (1-based, kept as given, so out-of-range or repeated ranks test the
    runtime's cleanup), or the pool reversed when `ranks` is None; raises `error` instead
    when one is set. Both may be changed between calls. Waits `delay` seconds first (to test
    deadlines and locks); `calls` records (query, pool size, limit) of every call.
    """

    def __init__(
        self,
        ranks: Sequence[int] | None = None,
        *,
        error: Exception | None = None,
        delay: float = 0.0,
        usage: InferenceUsage | None = None,
        policy_id: str = "powercontext.testing.scripted.v1",
    ) -> None:
        self.ranks = None if ranks is None else tuple(ranks)
        self.error = error
        self.delay = delay
        self.usage = usage or InferenceUsage(requests=1)
        self.policy_id = policy_id
        self.calls: list[tuple[str, int, int]] = []

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        self.calls.append((query, len(candidates), limit))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        ranks = self.ranks if self.ranks is not None else range(len(candidates), 0, -1)
        return MemoryRerankDecision(selected_ranks=tuple(ranks), usage=self.usage)


class QueryScriptedReranker:
    """Behaviour chosen by words in the query: `raise-timeout`, `raise-unavailable`,
    `raise-invalid` and `raise-crash` raise (the last a plain RuntimeError); `flaky-<token>`
    raises InferenceUnavailableError on the first `flaky_failures` calls naming that token
    (to test retries); any other query reverses the pool, so reranked output is recognizable.

    `secret` is appended to every error message: a test asserts it never reaches a client.
    """

    def __init__(
        self,
        *,
        flaky_failures: int = 2,
        secret: str = "",
        policy_id: str = "powercontext.testing.query-scripted.v1",
    ) -> None:
        self.flaky_failures = flaky_failures
        self.secret = secret
        self.policy_id = policy_id
        self.calls: list[str] = []
        self._flaky: dict[str, int] = {}

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        self.calls.append(query)
        if "raise-timeout" in query:
            raise InferenceTimeoutError(f"timed out; {self.secret}")
        if "raise-unavailable" in query:
            raise InferenceUnavailableError(f"HTTP 500: {self.secret}")
        if "raise-invalid" in query:
            raise InvalidInferenceOutputError(f"garbage output {self.secret}")
        if "raise-crash" in query:
            raise RuntimeError(f"unexpected {self.secret}")
        flaky = re.search(r"flaky-(\w+)", query)
        if flaky:
            seen = self._flaky.get(flaky.group(1), 0)
            self._flaky[flaky.group(1)] = seen + 1
            if seen < self.flaky_failures:
                raise InferenceUnavailableError(f"flaky {self.secret}")
        return MemoryRerankDecision(selected_ranks=tuple(range(len(candidates), 0, -1)))

    def flaky_attempts(self, token: str) -> int:
        """How many calls named `flaky-<token>` so far."""
        return self._flaky.get(token, 0)
