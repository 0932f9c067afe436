"""The PostgreSQL full-text channel: literals, IDF ranking, and the two-pass search's exactness."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from powercontext.memory.ports import CommitRequest, FtsQuery
from powercontext.memory.search import bm25
from powercontext.storage.postgres import PostgresMemoryStore, fulltext
from tests import pg_server
from tests.contract.builders import add, retire


def test_literals_quote_everything_and_keep_tokens_verbatim() -> None:
    literal, lexemes = fulltext.tsvector_literal("b a b it's back\\slash 東京 京")
    assert lexemes == ["b", "a", "it's", "back\\slash", "東京", "京"]
    assert literal == "'b' 'a' 'it''s' 'back\\\\slash' '東京' '京'"
    assert fulltext.tsvector_literal("") == ("", [])
    assert fulltext.tsvector_literal("x\x00y \x00") == ("'xy'", ["xy"])
    assert fulltext.term_query(["or", "!", "a'b"]) == "'or' | '!' | 'a''b'"


def test_the_plan_scores_rare_terms_higher_and_bounds_the_rest() -> None:
    frequencies = {"the": 5000, "lighthous": 3}
    plan = fulltext.plan_ranking(["the", "lighthous", "the"], frequencies, 10_000, 50_000, 0)
    assert plan is not None
    assert plan.terms == ("lighthous", "the")
    assert plan.weights[0] > 5 * plan.weights[1] > 0
    assert plan.first_pass == 1  # 5000 more documents would blow the first pass's budget
    assert (plan.own_average, plan.context_average) == (5.0, 1.0)
    assert fulltext.plan_ranking(["\x00"], {}, 10, 10, 0) is None


def test_common_terms_are_left_out_of_the_match_only_below_the_threshold() -> None:
    frequencies = {"rare": 1, "mid": 300, "the": 5000, "a": 6000}
    plan = fulltext.plan_ranking(["a", "the", "mid", "rare"], frequencies, 10_000, 1, 0)
    assert plan is not None and plan.terms == ("rare", "mid", "the", "a")
    assert plan.first_pass == 2
    weights = plan.weights
    common = bm25.MAX_SATURATION * (weights[2] + weights[3])
    # the limit-th score beats what "the" and "a" together can give: the first pass is final
    assert fulltext.terms_to_match(plan, [common * 1.01] * 3, limit=3) == 2
    # it beats "a" alone but not both: the second pass must match on "the" too
    between = bm25.MAX_SATURATION * weights[3] * 1.01
    assert fulltext.terms_to_match(plan, [between] * 3, limit=3) == 3
    assert fulltext.terms_to_match(plan, [0.0001] * 3, limit=3) == 4
    assert fulltext.terms_to_match(plan, [100.0], limit=3) == 4  # short: others may fill


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[PostgresMemoryStore]:
    opened = await PostgresMemoryStore.open(await pg_server.database_url(tmp_path))
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_rare_term_outranks_many_common_ones(store: PostgresMemoryStore) -> None:
    filler = [add(f"what did the team say about item {i}") for i in range(40)]
    result = await store.commit(
        CommitRequest("s", None, [*filler, add("the lighthouse keeper retired")])
    )
    terms = ["what", "did", "the", "team", "lighthous"]
    found = await store.fts_candidates(FtsQuery("s", 1, terms, limit=5))
    assert found[0].key == result.keys[-1]


def _oracle(
    documents: dict[int, list[str]], active: set[int], terms: list[str], limit: int
) -> list[int]:
    """BM25 with term frequencies over the active documents' own words, ties by key."""
    total = len(active)
    average = sum(len(documents[key]) for key in active) / total
    df = {t: sum(1 for key in active if t in documents[key]) for t in set(terms)}
    scored = []
    for key in active:
        words = documents[key]
        norm = 1 - 0.75 + 0.75 * len(words) / average
        score = 0.0
        for term in dict.fromkeys(terms):
            tf = words.count(term) / norm
            if tf:
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2)
        if score:
            scored.append((-score, key))
    return [key for _, key in sorted(scored)[:limit]]


async def test_both_passes_give_the_exact_top_of_the_ranking(
    store: PostgresMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tiny budget makes the first pass cover only the rarest term, so queries exercise the
    # early exit and the fallback to the second pass; both must match the oracle exactly.
    monkeypatch.setattr(fulltext, "FIRST_PASS_DF_BUDGET", 6)
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(60)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]  # Zipf-like
    texts = [" ".join(rng.choices(vocabulary, weights, k=rng.randint(2, 9))) for _ in range(300)]
    changes = [add(text, tokens=text) for text in texts]
    result = await store.commit(CommitRequest("z", None, changes))
    documents = {key: text.split() for key, text in zip(result.keys, texts, strict=True)}
    versions = await store.fetch_versions("z", result.keys[:60])
    await store.commit(CommitRequest("z", 1, [retire(versions[key]) for key in result.keys[:60]]))
    active = set(result.keys[60:])
    for trial in range(25):
        terms = rng.sample(vocabulary, rng.randint(1, 5))
        limit = rng.choice([3, 10, 40])
        found = await store.fts_candidates(FtsQuery("z", 2, terms, limit=limit))
        expected = _oracle(documents, active, terms, limit)
        assert [c.key for c in found] == expected, (trial, terms, limit)
