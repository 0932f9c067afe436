"""Property tests of rank normalization against every rule of the RFC's listwise policy.

The reference below is written from the RFC's wording, independently of the implementation:
keep the first occurrence of each in-range rank in the model's order, discard duplicates and
ranks outside 1..candidate_count, stop after k valid ranks, fall back to 1..k only when no valid
rank remains, never pad.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import example, given, settings
from hypothesis import strategies as st

from powercontext.memory.models import MemoryHit, MemoryRef
from powercontext.memory.search.ranks import normalize_ranks, resolve

candidate_counts = st.integers(min_value=1, max_value=40)
limits = st.integers(min_value=1, max_value=30)


@st.composite
def raw_outputs(draw: st.DrawFn) -> tuple[list[int], int, int]:
    """A model's raw ranks: mostly near the valid range, with duplicates and strays."""
    count = draw(candidate_counts)
    limit = draw(limits)
    near = st.integers(min_value=-3, max_value=count + 3)
    wild = st.integers(min_value=-(2**63), max_value=2**63)
    raw = draw(st.lists(st.one_of(near, near, near, wild), max_size=60))
    return raw, count, limit


@settings(max_examples=400, deadline=None)
@given(raw_outputs())
@example(([], 5, 3))
@example(([0, -1, 6, 99], 5, 3))
@example(([2, 2, 2], 5, 3))
@example(([5, 4, 3, 2, 1], 5, 2))
@example(([1], 1, 10))
def test_normalization_follows_the_rfc(case: tuple[list[int], int, int]) -> None:
    raw, count, limit = case
    selection = normalize_ranks(raw, count, limit)

    first_valid: list[int] = []
    for rank in raw:
        if 1 <= rank <= count and rank not in first_valid:
            first_valid.append(rank)

    if first_valid:
        # First occurrences, in the model's order, stopping after `limit`; never padded.
        assert selection.selected == tuple(first_valid[:limit])
        assert not selection.used_fallback
        assert len(selection.selected) == min(limit, len(first_valid))
    else:
        # Fallback to coarse ranks 1..k only when no valid rank remains.
        assert selection.used_fallback
        assert selection.selected == tuple(range(1, min(limit, count) + 1))

    # Always: distinct, in range, bounded by the limit.
    assert len(set(selection.selected)) == len(selection.selected)
    assert all(1 <= rank <= count for rank in selection.selected)
    assert len(selection.selected) <= limit

    # Discarded: every raw value not kept, in the order the model returned them.
    # Each kept rank is consumed at its first occurrence; anything else was dropped.
    kept = [] if selection.used_fallback else list(selection.selected)
    expected_discarded: list[int] = []
    for rank in raw:
        if kept and rank == kept[0]:
            kept.pop(0)
        else:
            expected_discarded.append(rank)
    assert kept == []
    assert selection.discarded == tuple(expected_discarded)

    # Accounting: kept and discarded together are exactly the raw values.
    accounted = Counter(selection.discarded)
    if not selection.used_fallback:
        accounted.update(selection.selected)
    assert accounted == Counter(raw)


@settings(max_examples=200, deadline=None)
@given(raw_outputs())
def test_every_out_of_range_or_repeated_rank_is_discarded(
    case: tuple[list[int], int, int],
) -> None:
    raw, count, limit = case
    selection = normalize_ranks(raw, count, limit)
    out_of_range = [rank for rank in raw if not 1 <= rank <= count]
    assert Counter(out_of_range) <= Counter(selection.discarded)
    seen: set[int] = set()
    repeats = []
    for rank in raw:
        if rank in seen:
            repeats.append(rank)
        seen.add(rank)
    assert Counter(repeats) <= Counter(selection.discarded)


@settings(max_examples=100, deadline=None)
@given(
    count=candidate_counts,
    limit=limits,
    raw=st.lists(st.integers(min_value=1, max_value=40), max_size=40),
)
def test_resolution_returns_the_pools_own_hits(count: int, limit: int, raw: list[int]) -> None:
    pool = tuple(
        MemoryHit(
            memory_ref=MemoryRef(scope_id="s", revision=3),
            entry_id=f"e{i}",
            entry_version_id=f"v{i}",
            kind="fact",
            text=f"text {i}",
            metadata={},
            score=1.0 / (61 + i),
            matched_by=("fts",),
        )
        for i in range(count)
    )
    selection = normalize_ranks(raw, count, limit)
    hits = resolve(pool, selection.selected)
    assert len(hits) == len(selection.selected)
    for rank, hit in zip(selection.selected, hits, strict=True):
        assert hit is pool[rank - 1]
