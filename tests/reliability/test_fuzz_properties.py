"""Hypothesis properties of the pure search stages: RRF fusion, admission and the analyzer.

Each reference below is written from the stage's documented rule, not from its code. (Rank
normalization has its own properties in tests/unit/test_ranks_property.py.)
"""

from __future__ import annotations

import math
import sqlite3

from hypothesis import example, given, settings
from hypothesis import strategies as st

from powercontext.memory.ports import FtsCandidate, VectorCandidate
from powercontext.memory.search.admission import admit, required_fts_terms
from powercontext.memory.search.analyze import (
    MAX_TOKEN_CHARS,
    AnalyzerConfig,
    analyze,
    index_tokens,
    query_terms,
)
from powercontext.memory.search.fusion import fuse_rrf

keys = st.integers(min_value=1, max_value=60)
channel_lists = st.lists(keys, max_size=40)
weights = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
any_text = st.text(st.characters(blacklist_categories=()), max_size=300)
"""Every code point, lone surrogates and NUL included."""


def reference_rrf(
    channels: dict[str, list[int]], k: int, weight: dict[str, float]
) -> dict[int, tuple[float, tuple[str, ...]]]:
    """score(d) = sum over channels of weight / (k + d's rank in that channel); a key listed
    twice counts once, at its first (best) position in the channel's list."""
    scores: dict[int, float] = {}
    matched: dict[int, tuple[str, ...]] = {}
    for channel in ("fts", "vector"):
        ranks: dict[int, int] = {}
        for rank, key in enumerate(channels.get(channel, []), start=1):
            ranks.setdefault(key, rank)
        for key, rank in ranks.items():
            scores[key] = scores.get(key, 0.0) + weight.get(channel, 1.0) / (k + rank)
            matched[key] = (*matched.get(key, ()), channel)
    return {key: (scores[key], matched[key]) for key in scores}


@settings(max_examples=400, deadline=None)
@given(
    fts=channel_lists,
    vector=channel_lists,
    limit=st.integers(min_value=1, max_value=50),
    k=st.integers(min_value=1, max_value=10_000),
    w_fts=weights,
    w_vector=weights,
    reverse=st.booleans(),
)
@example(fts=[1, 1, 2], vector=[2, 1], limit=5, k=60, w_fts=1.0, w_vector=1.0, reverse=False)
@example(fts=[3], vector=[4], limit=1, k=1, w_fts=0.0, w_vector=0.0, reverse=True)
# One channel: fused in its own order (fusion._one_channel) unless weighted 0 (ties by key).
@example(fts=[5, 3, 5, 9], vector=[], limit=2, k=20, w_fts=0.7, w_vector=1.0, reverse=False)
@example(fts=[], vector=[9, 2, 7], limit=5, k=1, w_fts=1.0, w_vector=0.0, reverse=True)
@example(fts=[9, 3, 7], vector=[], limit=3, k=1, w_fts=5e-324, w_vector=1.0, reverse=False)
def test_rrf_matches_its_definition(
    fts: list[int],
    vector: list[int],
    limit: int,
    k: int,
    w_fts: float,
    w_vector: float,
    reverse: bool,
) -> None:
    channels = {"fts": fts, "vector": vector}
    if reverse:  # the mapping's order must not matter
        channels = {"vector": vector, "fts": fts}
    weight = {"fts": w_fts, "vector": w_vector}
    fused = fuse_rrf(channels, limit=limit, k=k, weights=weight)  # type: ignore[arg-type]
    expected = reference_rrf(channels, k, weight)

    assert len(fused) == min(limit, len(expected))
    assert len({f.key for f in fused}) == len(fused)
    for candidate in fused:
        score, matched = expected[candidate.key]
        assert math.isclose(candidate.score, score, rel_tol=1e-12, abs_tol=1e-15)
        assert candidate.matched_by == matched
    order = [(-f.score, f.key) for f in fused]
    assert order == sorted(order)  # best first; equal scores by the smaller key
    if fused:  # the pool is the top of the ranking: nothing left out beats anything kept
        floor = (-fused[-1].score, fused[-1].key)
        kept = {f.key for f in fused}
        for key, (score, _) in expected.items():
            if key not in kept:
                assert (-score, key) > floor


@settings(max_examples=200, deadline=None)
@given(fts=channel_lists, extra=keys, limit=st.integers(min_value=1, max_value=50))
def test_rrf_a_second_channel_never_lowers_a_score(fts: list[int], extra: int, limit: int) -> None:
    alone = {f.key: f.score for f in fuse_rrf({"fts": fts}, limit=100)}
    both = {f.key: f.score for f in fuse_rrf({"fts": fts, "vector": [extra]}, limit=100)}
    for key, score in alone.items():
        assert both[key] >= score


def test_required_terms_rule_for_every_size() -> None:
    for n in range(0, 2000):
        need = required_fts_terms(n)
        assert need == (1 if n <= 2 else max(2, math.ceil(n / 4)))
        assert need <= max(n, 1)
        assert need <= required_fts_terms(n + 1)


terms = st.lists(st.sampled_from("abcdefghij"), max_size=14)
candidates = st.lists(
    st.tuples(keys, st.frozensets(st.sampled_from("abcdefghijxyz"), max_size=8)), max_size=30
)


@settings(max_examples=400, deadline=None)
@given(found=candidates, query=terms)
def test_fts_admission_is_the_distinct_term_rule_without_backfill(
    found: list[tuple[int, frozenset[str]]], query: list[str]
) -> None:
    pool = [
        FtsCandidate(key=key, score=-float(i), tokens=tokens)
        for i, (key, tokens) in enumerate(found)
    ]
    distinct = set(query)
    need = required_fts_terms(len(distinct))
    expected = [c.key for c in pool if len(distinct & c.tokens) >= need]
    assert admit(pool, [], query).keys["fts"] == expected
    # A candidate holding every query term is always admitted.
    if not distinct:
        return
    richer = [FtsCandidate(c.key, c.score, c.tokens | distinct) for c in pool]
    assert admit(richer, [], query).keys["fts"] == [c.key for c in pool]


@settings(max_examples=300, deadline=None)
@given(
    found=st.lists(st.tuples(keys, st.floats(-1.5, 1.5) | st.just(math.nan)), max_size=30),
    threshold=st.floats(min_value=-1.0, max_value=1.0),
)
def test_vector_admission_is_an_inclusive_threshold_in_order(
    found: list[tuple[int, float]], threshold: float
) -> None:
    pool = [VectorCandidate(key, similarity) for key, similarity in found]
    admitted = admit([], pool, (), min_similarity=threshold).keys["vector"]
    # NaN compares false: a broken similarity is never admitted.
    assert admitted == [key for key, similarity in found if similarity >= threshold]


def _fts5_tokens(conn: sqlite3.Connection, text: str) -> list[str]:
    """How SQLite's FTS5 `ascii` tokenizer (the index's) splits `text`."""
    conn.execute("DELETE FROM probe")
    conn.execute("INSERT INTO probe (tokens) VALUES (?)", (text,))
    return [row[0] for row in conn.execute("SELECT term FROM probe_terms ORDER BY offset")]


FTS5 = sqlite3.connect(":memory:")
FTS5.execute("CREATE VIRTUAL TABLE probe USING fts5 (tokens, tokenize = 'ascii')")
FTS5.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab (probe, 'instance')")

analyzers = st.sampled_from(
    [AnalyzerConfig(), AnalyzerConfig(language=None), AnalyzerConfig(drop_query_stopwords=True)]
)


@settings(max_examples=500, deadline=None)
@given(text=any_text, config=analyzers)
@example(text="\x00", config=AnalyzerConfig())
@example(text="\ud800 lone \udfff surrogates", config=AnalyzerConfig())
@example(text="!?.,;:'\"*()^-+~`<>{}[]|\\/" * 10, config=AnalyzerConfig())
@example(text='NEAR("a" b) OR c* AND -d ^e NOT f:g', config=AnalyzerConfig())
@example(
    text="Ελληνικά русский 中文 العربية हिन्दी 한국어 😀 ǅemal ß İstanbul", config=AnalyzerConfig()
)
@example(text="ｆｕｌｌｗｉｄｔｈ ﬁ ﬀ Ⅻ ① ²", config=AnalyzerConfig())
@example(text="x" * 200 + " " + "é" * 100, config=AnalyzerConfig(language=None))
def test_the_analyzer_survives_any_text_and_agrees_with_the_index(
    text: str, config: AnalyzerConfig
) -> None:
    tokens = analyze(text, config)
    assert all(tokens)
    for token in tokens:
        assert not any(ch.isspace() for ch in token)
        # ASCII inside a token is only what FTS5's ascii tokenizer keeps as token characters.
        assert all(not ch.isascii() or (ch.isalnum() and not ch.isupper()) for ch in token)
        assert len(token) <= MAX_TOKEN_CHARS
        token.encode("utf-8")  # no lone surrogate or other unencodable leftover
        assert "\x00" not in token
    joined = index_tokens(text, config)
    assert joined == " ".join(tokens)
    assert _fts5_tokens(FTS5, joined) == tokens  # the index sees exactly the analyzer's tokens
    query = query_terms(text, config)
    assert len(set(query)) == len(query)
    assert set(query) <= set(tokens)
    assert analyze(text, config) == tokens  # deterministic
