import pytest

from powercontext.memory.search.fusion import fuse_rrf


def test_single_channel_rank_one_scores_one_over_61() -> None:
    (first, second) = fuse_rrf({"fts": [7, 3]}, limit=10)
    assert first.key == 7 and first.score == 1 / 61 and first.matched_by == ("fts",)
    assert second.score == 1 / 62


def test_both_channels_add_up_and_record_matches() -> None:
    fused = fuse_rrf({"fts": [1, 2], "vector": [2, 3]}, limit=10)
    assert [f.key for f in fused] == [2, 1, 3]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[0].matched_by == ("fts", "vector")
    assert fused[2].matched_by == ("vector",)


def test_ties_break_by_key_deterministically() -> None:
    fused = fuse_rrf({"fts": [9], "vector": [4]}, limit=10)
    assert [f.key for f in fused] == [4, 9]


def test_limit_bounds_the_pool() -> None:
    assert len(fuse_rrf({"fts": list(range(100))}, limit=30)) == 30


def test_weights_and_constant_are_configurable() -> None:
    fused = fuse_rrf({"fts": [1], "vector": [2]}, limit=5, k=10, weights={"fts": 0.5})
    assert [f.key for f in fused] == [2, 1]
    assert fused[0].score == 1 / 11 and fused[1].score == 0.5 / 11


def test_repeated_key_counts_at_its_best_rank() -> None:
    (only,) = fuse_rrf({"fts": [5, 5]}, limit=5)
    assert only.score == 1 / 61


def test_empty_channels_give_an_empty_pool() -> None:
    assert fuse_rrf({"fts": [], "vector": []}, limit=5) == []
