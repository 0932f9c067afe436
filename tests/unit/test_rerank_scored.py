"""The scored policy's selection: threshold, top-k, score order, invalid indexes."""

from __future__ import annotations

from powercontext.memory.rerank.scored import ScoredResult, select_by_score


def _results(*pairs: tuple[int, float]) -> list[ScoredResult]:
    return [ScoredResult(index=i, score=s) for i, s in pairs]


def test_score_order_with_ties_in_coarse_order() -> None:
    results = _results((0, 0.1), (3, 0.9), (2, 0.5), (1, 0.5))
    assert select_by_score(results, 4, threshold=None, top_k=None) == (4, 2, 3, 1)


def test_response_order_does_not_change_the_selection() -> None:
    results = _results((0, 0.3), (1, 0.3), (2, 0.8), (3, 0.3))
    forward = select_by_score(results, 4, threshold=0.3, top_k=3)
    assert forward == select_by_score(results[::-1], 4, threshold=0.3, top_k=3) == (3, 1, 2)


def test_threshold_makes_the_selection_sparse() -> None:
    results = _results((0, 0.1), (1, 0.7), (2, 0.69))
    assert select_by_score(results, 3, threshold=0.7, top_k=None) == (2,)
    assert select_by_score(results, 3, threshold=0.95, top_k=None) == ()


def test_top_k_counts_only_distinct_valid_ranks() -> None:
    results = _results((9, 1.0), (0, 0.9), (0, 0.8), (1, 0.7), (2, 0.6))
    # rank 10 is out of range and the repeated index 0 is no new rank: both pass through
    # for normalization to discard, and neither takes a top-k slot.
    assert select_by_score(results, 3, threshold=None, top_k=2) == (10, 1, 1, 2)
