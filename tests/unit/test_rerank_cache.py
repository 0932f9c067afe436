"""The rerank cache on its own: key identity, TTL with an injected clock, LRU bound."""

from __future__ import annotations

import pytest

from powercontext.memory.models import MemoryHit, MemoryRef, MemoryRerankDecision
from powercontext.memory.rerank.cache import RerankCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _hits(*version_ids: str) -> tuple[MemoryHit, ...]:
    ref = MemoryRef(scope_id="s", revision=1)
    return tuple(
        MemoryHit(
            memory_ref=ref,
            entry_id=f"e-{v}",
            entry_version_id=v,
            kind="fact",
            text=f"text {v}",
            metadata={},
            score=1.0,
            matched_by=("fts",),
        )
        for v in version_ids
    )


DECISION = MemoryRerankDecision(selected_ranks=(2, 1))


def test_key_depends_on_policy_query_versions_order_and_limit() -> None:
    base = RerankCache.key("p.v1", "q", _hits("a", "b"), 2)
    assert base == RerankCache.key("p.v1", "q", _hits("a", "b"), 2)
    others = [
        RerankCache.key("p.v2", "q", _hits("a", "b"), 2),
        RerankCache.key("p.v1", "q2", _hits("a", "b"), 2),
        RerankCache.key("p.v1", "q", _hits("b", "a"), 2),
        RerankCache.key("p.v1", "q", _hits("a", "b", "c"), 2),
        RerankCache.key("p.v1", "q", _hits("a", "b"), 3),
    ]
    assert base not in others and len(set(others)) == len(others)
    assert len(base.digest) == 64  # a sha256 digest: the cache holds no query text


def test_ttl_expires_entries_by_the_injected_clock() -> None:
    clock = FakeClock()
    cache = RerankCache(ttl_seconds=10, max_entries=4, clock=clock)
    key = RerankCache.key("p", "q", _hits("a"), 1)
    cache.put(key, DECISION)
    clock.now += 9.9
    assert cache.get(key) == DECISION
    clock.now += 0.1
    assert cache.get(key) is None and len(cache) == 0
    assert (cache.hits, cache.misses) == (1, 1)


def test_lru_bound_evicts_the_least_recently_used() -> None:
    cache = RerankCache(ttl_seconds=60, max_entries=2, clock=FakeClock())
    keys = [RerankCache.key("p", f"q{i}", _hits("a"), 1) for i in range(3)]
    cache.put(keys[0], DECISION)
    cache.put(keys[1], DECISION)
    assert cache.get(keys[0]) is not None  # 0 is now the most recent
    cache.put(keys[2], DECISION)
    assert cache.get(keys[1]) is None
    assert cache.get(keys[0]) is not None and cache.get(keys[2]) is not None


def test_degraded_decisions_are_never_stored() -> None:
    cache = RerankCache(ttl_seconds=60, max_entries=2)
    key = RerankCache.key("p", "q", _hits("a"), 1)
    cache.put(key, MemoryRerankDecision(selected_ranks=(1,), degraded=True))
    assert cache.get(key) is None


@pytest.mark.parametrize(("ttl", "size"), [(0, 1), (-1, 1), (float("inf"), 1), (1, 0)])
def test_invalid_bounds_are_refused(ttl: float, size: int) -> None:
    with pytest.raises(ValueError):
        RerankCache(ttl_seconds=ttl, max_entries=size)
