"""The built-in scored rerank policy `powercontext.memory.rerank.scored.v1`.

Pure domain code: how relevance scores from a dedicated rerank model (a cross-encoder behind a
`POST /rerank` endpoint) become ranks. A candidate is selected when its score reaches the
threshold; the selection is ordered by score (ties keep the coarse order) and holds at most
`top_k` valid ranks. The Memory service then applies the RFC's normalization (the caller's
limit, and the coarse fallback when nothing valid remains) exactly as for the listwise policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

POLICY_ID = "powercontext.memory.rerank.scored.v1"


@dataclass(frozen=True, slots=True)
class ScoredResult:
    index: int
    """0-based position in the documents sent, as the endpoint reported it."""
    score: float


def select_by_score(
    results: Sequence[ScoredResult],
    candidate_count: int,
    *,
    threshold: float | None,
    top_k: int | None,
) -> tuple[int, ...]:
    """1-based ranks, best score first: every result at or above `threshold`, stopping after
    `top_k` distinct in-range ranks. Out-of-range or repeated indexes are passed through (not
    counted against `top_k`) so that normalization discards and traces them."""
    # Ties go to the coarse order (the lower index), not to the endpoint's response order, so
    # equal scores give the same page whichever way an endpoint lists its results.
    ordered = sorted(results, key=lambda result: (-result.score, result.index))
    ranks: list[int] = []
    valid: set[int] = set()
    for result in ordered:
        if threshold is not None and result.score < threshold:
            continue
        if top_k is not None and len(valid) >= top_k:
            break
        rank = result.index + 1
        ranks.append(rank)
        if 1 <= rank <= candidate_count:
            valid.add(rank)
    return tuple(ranks)
