"""Every LoCoMo metric on worked examples; the arithmetic is in the comments."""

from __future__ import annotations

import math

import pytest

from powercontext.bench.locomo.metrics import (
    abstained,
    aggregate,
    answer_tokens,
    bleu1,
    cutoffs,
    exact_match,
    multi_answer_f1,
    normalize_answer,
    percentile,
    score_answer,
    score_ranking,
    scoring_gold,
    summary,
    token_f1,
)

R = frozenset


def test_cutoffs_are_5_10_and_the_pool() -> None:
    assert cutoffs(30) == (5, 10, 30)
    assert cutoffs(10) == (5, 10)
    assert cutoffs(8) == (5, 8)
    assert cutoffs(3) == (3,)


def test_score_ranking_turn_granularity() -> None:
    ranking = [R({"D1:2"}), R({"D1:1"}), R(), R({"D2:1"}), R({"D3:3"}), R({"D2:5"})]
    gold = {"D1:1", "D2:1", "D2:5"}
    scores = score_ranking(ranking, gold, (1, 2, 5, 6))
    assert scores["recall@1"] == 0.0  # rank 1 covers nothing of the gold
    assert scores["recall@2"] == pytest.approx(1 / 3)  # D1:1 of 3 gold ids
    assert scores["recall@5"] == pytest.approx(2 / 3)  # D1:1, D2:1
    assert scores["recall@6"] == 1.0  # D1:1, D2:1, D2:5
    assert (scores["hit@1"], scores["hit@2"], scores["hit@6"]) == (0.0, 1.0, 1.0)
    assert scores["mrr@1"] == 0.0  # the first evidence hit is at rank 2 > 1
    assert scores["mrr@2"] == 0.5  # 1 / 2
    assert scores["mrr@6"] == 0.5


def test_score_ranking_session_hit_covers_its_turns() -> None:
    ranking = [R({"D1:1", "D1:2", "D1:3"}), R({"D4:1", "D4:2"})]
    scores = score_ranking(ranking, {"D1:1", "D1:3", "D2:1"}, (1, 2))
    assert scores["recall@1"] == pytest.approx(2 / 3)  # D1:1 and D1:3 of 3
    assert scores["mrr@2"] == 1.0


def test_score_ranking_counts_an_id_once_and_handles_an_empty_ranking() -> None:
    scores = score_ranking([R({"D1:1"}), R({"D1:1"})], {"D1:1", "D1:2"}, (2,))
    assert scores["recall@2"] == 0.5  # 1 distinct id of 2, though covered twice
    empty = score_ranking([], {"D1:1"}, (5,))
    assert empty == {"recall@5": 0.0, "hit@5": 0.0, "mrr@5": 0.0}
    with pytest.raises(ValueError, match="at least one evidence id"):
        score_ranking([], set(), (5,))


def test_aggregate_overall_is_categories_1_to_4() -> None:
    rows = [(1, {"x": 1.0}), (4, {"x": 0.0}), (4, {"x": 0.5}), (5, {"x": 1.0})]
    result = aggregate(rows)
    assert list(result) == ["overall", "multi-hop", "single-hop", "adversarial"]
    assert result["overall"] == {"n": 3.0, "x": pytest.approx(0.5)}  # (1 + 0 + 0.5) / 3
    assert result["single-hop"]["x"] == 0.25  # (0 + 0.5) / 2
    assert result["adversarial"] == {"n": 1.0, "x": 1.0}


def test_percentile_interpolates_linearly() -> None:
    values = [40.0, 10.0, 30.0, 20.0]
    assert percentile(values, 50) == 25.0  # position 1.5 between 20 and 30
    assert percentile(values, 95) == pytest.approx(38.5)  # position 2.85: 30 + 0.85 * 10
    assert percentile([], 50) is None
    assert summary([2.0, 4.0])["mean"] == 3.0


def test_normalisation() -> None:
    assert normalize_answer("The Quick, brown fox and the dog!") == "quick brown fox dog"
    assert answer_tokens("Adopted puppies") == ["adopt", "puppi"]  # Porter stems
    assert answer_tokens("Adopted puppies", stem=False) == ["adopted", "puppies"]


def test_token_f1() -> None:
    # "golden retrievers" and "golden retriever" share both stems: P = R = 1
    assert token_f1("The golden retrievers", "a golden retriever") == 1.0
    # prediction stems: she adopt biscuit in mai (5); gold: biscuit (1); same = 1
    # P = 1/5, R = 1, F1 = 2 * 0.2 * 1 / 1.2 = 1/3
    assert token_f1("She adopted Biscuit in May", "Biscuit") == pytest.approx(1 / 3)
    assert token_f1("cat", "dog") == 0.0
    assert token_f1("", "dog") == 0.0


def test_multi_answer_f1_splits_comma_lists() -> None:
    # gold items: puppy -> 1 (matches "puppy"), violin -> 1, chess -> 0; mean = 2/3
    assert multi_answer_f1("violin, puppy", "puppy, violin, chess") == pytest.approx(2 / 3)
    # without the split the whole strings share 2 of 3 gold stems: P = 2/2, R = 2/3, F1 = 0.8
    assert token_f1("violin, puppy", "puppy, violin, chess") == pytest.approx(0.8)


def test_exact_match() -> None:
    assert exact_match("The Biscuit!", "biscuit") == 1.0
    assert exact_match("Biscuit the dog", "Biscuit") == 0.0


def test_bleu1() -> None:
    # 2 of 3 predicted unigrams in the gold; prediction longer than gold: no penalty -> 2/3
    assert bleu1("golden retriever puppy", "golden retriever") == pytest.approx(2 / 3)
    # precision 1/1, brevity penalty exp(1 - 2/1) = e^-1
    assert bleu1("retriever", "golden retriever") == pytest.approx(math.exp(-1))
    # clipped: "dog" counts once of 3 predicted tokens -> 1/3
    assert bleu1("dog dog dog", "dog") == pytest.approx(1 / 3)
    assert bleu1("", "dog") == 0.0


def test_scoring_gold_cuts_category_3_at_semicolon() -> None:
    assert scoring_gold("Psychology; because she likes people", 3) == "Psychology"
    assert scoring_gold("Psychology; counseling", 4) == "Psychology; counseling"


def test_score_answer_per_category() -> None:
    # category 3 scores against "psychology" only: F1 = 1
    open_domain = score_answer("psychology", "Psychology; because she likes people", 3)
    assert open_domain.f1 == 1.0
    assert open_domain.exact_match == 1.0
    multi = score_answer("violin, puppy", "puppy, violin, chess", 1)
    assert multi.f1 == pytest.approx(2 / 3)
    assert multi.exact_match == 0.0


def test_category_5_scores_abstention() -> None:
    assert abstained("Not mentioned in the conversation.")
    assert abstained("No information available")
    assert not abstained("a golden retriever")
    assert score_answer("It is not mentioned.", None, 5).as_dict() == {
        "exact_match": 1.0,
        "f1": 1.0,
        "bleu1": 1.0,
    }
    assert score_answer("golden retriever", None, 5).f1 == 0.0
    with pytest.raises(ValueError, match="needs a gold answer"):
        score_answer("x", None, 4)
