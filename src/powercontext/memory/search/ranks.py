"""Stage 5: normalize a reranker's raw ranks and resolve them to the pool's own hits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from powercontext.memory.models import MemoryHit


@dataclass(frozen=True, slots=True)
class RankSelection:
    selected: tuple[int, ...]
    discarded: tuple[int, ...]
    """Raw values dropped (duplicates, out of range, beyond the limit), in the order given."""
    used_fallback: bool


def normalize_ranks(raw: Sequence[int], candidate_count: int, limit: int) -> RankSelection:
    """The RFC's listwise normalization.

    Keep the first occurrence of each rank in 1..candidate_count in the given order, stop after
    `limit` valid ranks, and fall back to 1..min(limit, candidate_count) only when no valid rank
    remains. A sparse selection is never padded.
    """
    selected: list[int] = []
    discarded: list[int] = []
    for rank in raw:
        valid = 1 <= rank <= candidate_count and rank not in selected
        if valid and len(selected) < limit:
            selected.append(rank)
        else:
            discarded.append(rank)
    if not selected:
        fallback = tuple(range(1, min(limit, candidate_count) + 1))
        return RankSelection(fallback, tuple(discarded), used_fallback=True)
    return RankSelection(tuple(selected), tuple(discarded), used_fallback=False)


def resolve(pool: Sequence[MemoryHit], ranks: Sequence[int]) -> tuple[MemoryHit, ...]:
    """The pool's own hit objects at the given 1-based ranks: identity is never rebuilt."""
    return tuple(pool[rank - 1] for rank in ranks)
