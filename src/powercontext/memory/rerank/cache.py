"""A bounded TTL cache of rerank decisions. Pure Python; the clock is injectable for tests.

A decision is reused only for the same policy, the same normalized query, the same candidate
entry versions in the same coarse order, and the same limit. Entry versions are immutable, so
a hit can only ever resolve to the same hits the original decision saw: a write that changes
the pool (new entry, revision, retirement) changes the key. Only successful provider answers
are stored; a degraded (fail-open) decision never is, so an outage is not remembered.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from powercontext.memory.bounds import at_least_one, positive
from powercontext.memory.models import MemoryHit, MemoryRerankDecision

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class RerankCacheKey:
    digest: str


class RerankCache:
    """LRU with a time-to-live: `get` drops an expired entry, `put` evicts the oldest beyond
    `max_entries`. Not shared across processes; asyncio-safe because no method awaits."""

    def __init__(
        self, *, ttl_seconds: float, max_entries: int, clock: Clock = time.monotonic
    ) -> None:
        self.ttl_seconds = positive("ttl_seconds", ttl_seconds)
        self.max_entries = at_least_one("max_entries", max_entries)
        self._clock = clock
        self._entries: OrderedDict[RerankCacheKey, tuple[float, MemoryRerankDecision]] = (
            OrderedDict()
        )
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(
        policy_id: str, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> RerankCacheKey:
        # A digest rather than the tuple itself: the cache then holds no query text.
        parts = [policy_id, query, str(limit), *(hit.entry_version_id for hit in candidates)]
        digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
        return RerankCacheKey(digest)

    def get(self, key: RerankCacheKey) -> MemoryRerankDecision | None:
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
            return None
        expires, decision = found
        if self._clock() >= expires:
            del self._entries[key]
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return decision

    def put(self, key: RerankCacheKey, decision: MemoryRerankDecision) -> None:
        if decision.degraded:
            return
        self._entries[key] = (self._clock() + self.ttl_seconds, decision)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
