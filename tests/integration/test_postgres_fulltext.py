"""The PostgreSQL full-text channel: literals, IDF ranking, and the two-pass search's exactness."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from powercontext.memory.ports import CommitRequest, FtsQuery
from powercontext.storage.postgres import PostgresMemoryStore, fulltext, maxscore
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
    plan = maxscore.plan_ranking(["the", "lighthous", "the"], frequencies, 10_000, 50_000, 0)
    assert plan is not None
    assert plan.terms == ("lighthous", "the")
    assert plan.weights[0] > 5 * plan.weights[1] > 0
    assert plan.first_pass == 1  # 5000 more documents would blow the first pass's budget
    assert (plan.own_average, plan.context_average) == (5.0, 1.0)
    assert maxscore.plan_ranking(["\x00"], {}, 10, 10, 0) is None


def test_later_passes_match_the_terms_that_can_reach_the_threshold_together() -> None:
    frequencies = {"rare": 1, "mid": 300, "the": 5000, "a": 6000}
    plan = maxscore.plan_ranking(["a", "the", "mid", "rare"], frequencies, 10_000, 1, 0)
    assert plan is not None and plan.terms == ("rare", "mid", "the", "a")
    assert plan.first_pass == 2
    mid, the, a = plan.bound(1), plan.bound(2), plan.bound(3)
    assert maxscore.rest_bound(plan) == the + a
    # below every bound: any of the later terms; above one, only both together (in any field)
    the_, a_ = "('the' | '_the' | '@the')", "('a' | '_a' | '@a')"
    assert maxscore.match_query(plan, min(the, a) * 0.9) == [the_, a_]
    assert maxscore.match_query(plan, max(the, a) * 1.01) == [f"{the_} & ({a_})"]
    # the stored peaks bound lower than (k1 + 1) idf, and a single occurrence lower still
    peaks = {term: fulltext.Peak(1, 0.5) for term in frequencies}
    peaks["\x1fthe"] = fulltext.Peak(3, 1.0)
    frequencies["\x1fthe"] = 40
    tight = maxscore.plan_ranking(
        ["a", "the", "mid", "rare"], frequencies, 10_000, 50_000, 0, None, peaks
    )
    assert tight is not None and tight.term_marks(2) == ("\x1fthe",)
    assert tight.single_bound(2) < tight.bound(2) < the
    assert tight.bound(1) == tight.single_bound(1) < mid
    # where "the" occurs once it cannot reach the threshold with "a"; where it repeats it can
    threshold = tight.single_bound(2) + tight.bound(3) + 1e-6
    assert tight.bound(2) < threshold < tight.bound(2) + tight.bound(3)
    assert maxscore.match_query(tight, threshold) == ["('\x1fthe') & (('a'))"]


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
    documents: dict[int, list[str]],
    active: set[int],
    terms: list[str],
    limit: int,
    common: int | None = None,
) -> list[int]:
    """BM25 with term frequencies over the active documents' own words, ties by key; with
    `common`, only documents holding a term at most `common` documents hold (or else the
    rarest, the first of the query's on a tie) are candidates, unless fewer than `limit` are."""
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
    ranked = [key for _, key in sorted(scored)]
    held = [t for t in dict.fromkeys(terms) if df[t]]
    if common is not None and held:
        finders = {t for t in held if df[t] <= common} or {min(held, key=lambda t: df[t])}
        found = [key for key in ranked if not finders.isdisjoint(documents[key])]
        if len(found) >= limit:
            return found[:limit]
    return ranked[:limit]


@pytest.mark.parametrize(
    ("conjunctions", "common"),
    [(32, None), (1, None), (32, 40), (1, 40)],
    ids=["conjunctions", "widened", "common-terms", "common-terms-widened"],
)
async def test_every_pass_gives_the_exact_top_of_the_ranking(
    store: PostgresMemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    conjunctions: int,
    common: int | None,
) -> None:
    # A tiny budget makes the first pass cover only the rarest term, so queries exercise the
    # early exit, the conjunctive second pass (with the marks of repeated words), the guessed
    # thresholds of a short first pass and, with one conjunction at most, the widened match; every
    # path must match the oracle exactly.
    monkeypatch.setattr(maxscore, "FIRST_PASS_DF_BUDGET", 6)
    monkeypatch.setattr(maxscore, "MAX_CONJUNCTIONS", conjunctions)
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
    for trial in range(60):
        terms = rng.sample(vocabulary, rng.randint(1, 6))
        limit = rng.choice([1, 3, 10, 40])
        query = FtsQuery("z", 2, terms, limit=limit, common_term_entries=common)
        found = await store.fts_candidates(query)
        expected = _oracle(documents, active, terms, limit, common)
        assert [c.key for c in found] == expected, (trial, terms, limit)
        assert all(not t.startswith(fulltext.REPEAT_MARK) for c in found for t in c.tokens)


async def test_a_version_of_speaker_words_only_stores_an_unbounded_ratio(
    store: PostgresMemoryStore,
) -> None:
    changes = [add("a", tokens="@ann @ann"), add("b", tokens="x")]
    result = await store.commit(CommitRequest("sp", None, changes))
    found = await store.fts_candidates(FtsQuery("sp", 1, ["ann"], limit=5))
    assert [c.key for c in found] == [result.keys[0]]
    assert found[0].tokens == frozenset({"@ann"})  # the repeat mark stays inside
