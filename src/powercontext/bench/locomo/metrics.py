"""Deterministic metrics: evidence retrieval and answer overlap. Pure functions, no I/O.

Retrieval: a ranking is a sequence of hits, each reduced to the set of dia ids it covers.
Answers: the authors' normalisation (lower case, no punctuation, no articles, Porter stems).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from powercontext.bench.locomo.dataset import CATEGORY_NAMES, SCORED_CATEGORIES

Ranking = Sequence[frozenset[str]]
OVERALL = "overall"

# ---- retrieval ----------------------------------------------------------------------------


def cutoffs(pool_size: int) -> tuple[int, ...]:
    """k = 5 and 10 where the pool is that deep, and the pool size; ascending."""
    if pool_size < 1:
        raise ValueError("the pool size must be at least 1")
    return tuple(sorted({k for k in (5, 10) if k < pool_size} | {pool_size}))


def score_ranking(ranking: Ranking, gold: Iterable[str], ks: Sequence[int]) -> dict[str, float]:
    """recall@k (share of gold ids covered by the first k hits), hit@k (any covered) and
    MRR@k (1/rank of the first hit covering any gold id) for every k."""
    gold_set = frozenset(gold)
    if not gold_set:
        raise ValueError("a ranking can only be scored against at least one evidence id")
    first = next(
        (rank for rank, covered in enumerate(ranking, start=1) if covered & gold_set), None
    )
    scores: dict[str, float] = {}
    for k in ks:
        seen: set[str] = set()
        for covered in ranking[:k]:
            seen |= covered & gold_set
        scores[f"recall@{k}"] = len(seen) / len(gold_set)
        scores[f"hit@{k}"] = 1.0 if seen else 0.0
        scores[f"mrr@{k}"] = 1.0 / first if first is not None and first <= k else 0.0
    return scores


def group_names(category: int) -> tuple[str, ...]:
    name = CATEGORY_NAMES.get(category, f"category-{category}")
    return (name, OVERALL) if category in SCORED_CATEGORIES else (name,)


def aggregate(rows: Iterable[tuple[int, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean of every metric per category name, and `overall` over categories 1-4 only.
    Each group also carries `n`, the number of rows averaged."""
    sums: dict[str, defaultdict[str, float]] = {}
    counts: Counter[str] = Counter()
    for category, scores in rows:
        for group in group_names(category):
            counts[group] += 1
            bucket = sums.setdefault(group, defaultdict(float))
            for metric, value in scores.items():
                bucket[metric] += value
    ordered = [OVERALL, *(CATEGORY_NAMES[c] for c in sorted(CATEGORY_NAMES))]
    result: dict[str, dict[str, float]] = {}
    for group in [*ordered, *sorted(set(sums) - set(ordered))]:
        if group not in sums:
            continue
        n = counts[group]
        result[group] = {"n": float(n), **{m: v / n for m, v in sorted(sums[group].items())}}
    return result


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Sequence[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "mean": sum(values) / len(values) if values else None,
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
    }


# ---- answers ------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
"""The authors' code also drops `and`, so list answers compare item by item."""
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ABSTENTIONS = ("no information available", "not mentioned")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("porter")


def normalize_answer(text: str) -> str:
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str, *, stem: bool = True) -> list[str]:
    tokens = normalize_answer(text).split()
    if not stem:
        return tokens
    stems: list[str] = _stemmer().stemWords(tokens)
    return stems


def token_f1(prediction: str, gold: str) -> float:
    predicted = answer_tokens(prediction)
    expected = answer_tokens(gold)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Category 1: each comma-separated gold item scores its best-matching predicted item."""
    predictions = [part.strip() for part in prediction.split(",")]
    golds = [part.strip() for part in gold.split(",")]
    best = [max(token_f1(p, g) for p in predictions) for g in golds]
    return sum(best) / len(best)


def exact_match(prediction: str, gold: str) -> float:
    return 1.0 if answer_tokens(prediction) == answer_tokens(gold) else 0.0


def bleu1(prediction: str, gold: str) -> float:
    """Clipped unigram precision times the brevity penalty, on normalised unstemmed tokens."""
    predicted = answer_tokens(prediction, stem=False)
    expected = answer_tokens(gold, stem=False)
    if not predicted or not expected:
        return 0.0
    clipped = sum((Counter(predicted) & Counter(expected)).values())
    c, r = len(predicted), len(expected)
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * clipped / c


def abstained(prediction: str) -> bool:
    lowered = prediction.lower()
    return any(phrase in lowered for phrase in _ABSTENTIONS)


def scoring_gold(answer: str, category: int) -> str:
    """Category 3 golds append the rationale after `;`: only the part before it is scored."""
    return answer.split(";")[0].strip() if category == 3 else answer


@dataclass(frozen=True, slots=True)
class AnswerScores:
    exact_match: float
    f1: float
    bleu1: float

    def as_dict(self) -> dict[str, float]:
        return {"exact_match": self.exact_match, "f1": self.f1, "bleu1": self.bleu1}


def score_answer(prediction: str, gold: str | None, category: int) -> AnswerScores:
    """Category 5 has no gold to overlap with: as in the authors' code, an answer scores 1 on
    every metric when it abstains and 0 otherwise."""
    if category == 5:
        value = 1.0 if abstained(prediction) else 0.0
        return AnswerScores(value, value, value)
    if gold is None:
        raise ValueError(f"category {category} needs a gold answer")
    gold = scoring_gold(gold, category)
    f1 = multi_answer_f1(prediction, gold) if category == 1 else token_f1(prediction, gold)
    return AnswerScores(exact_match(prediction, gold), f1, bleu1(prediction, gold))
