"""Pseudo-relevance feedback for the full-text channel.

A question and its evidence often share no content word ("camping" against "we roasted
marshmallows"), but the entries the question does match best tend to sit among words of the
same topic. Feedback takes the channel's first few admitted entries as relevant, picks the
words they share that are specific to them (common in those few, rare among the rest of the
candidates), runs the channel again with those words, and merges the second ranking into
the first at a lower weight. The question's best matches keep the lead: an entry found only
through the expansion ranks behind the question's first k + 1 at weight 0.5.

Only the entries' own words are read (not their neighbours' or speaker fields), and the
query's terms, stop words, tokens shorter than three characters, words that most of the
channel's candidates hold and words less than twice as common among the feedback entries as
among the other candidates (a scope's common words) are never expansion terms. The second
ranking passes the same admission rule as the first, counted over the expansion terms.
Everything here is pure: the caller supplies the channel as a function.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from powercontext.memory.ports import FtsCandidate, FtsQuery
from powercontext.memory.search.admission import Admission, admit
from powercontext.memory.search.analyze import AnalyzerConfig, analyze
from powercontext.memory.search.fields import PREFIXES

MIN_TERM_CHARS = 3


@dataclass(frozen=True, slots=True)
class FeedbackConfig:
    docs: int = 3
    """The first admitted full-text entries read as relevant; 0 turns feedback off."""
    terms: int = 5
    """Expansion terms taken from them."""
    weight: float = 0.5
    """The expansion ranking's weight against the question's own (1.0) when merged."""
    min_docs: int = 2
    """An expansion term must occur in at least this many of the feedback entries: a word
    in one entry only says what that entry is about, not what the question's topic is."""
    max_share: float = 0.5
    """...and in at most this share of all the channel's candidates: a word most of them
    hold (a name, a template's word) says nothing the question did not."""
    min_lift: float = 2.0
    """...and be at least this many times as common among the feedback entries as among the
    other candidates: a word no more frequent where the question matched best than elsewhere
    in the channel's list (a common word of the scope) says nothing about its topic, and a
    second run over it would rank a large share of the scope by length (0: no such rule)."""
    max_scope_share: float = 0.2
    """...and is left out of the second run when more than this share of the scope's entries
    hold it in their own text: such a word names no topic (it passed the rules above only
    because the question's matches hold it too), and a run over it scores most of the scope.
    The store applies it (FtsQuery.max_term_share), from the statistics it keeps (1: no
    such rule)."""
    max_scope_entries: int = 2_000
    """...or when more than this many of the scope's entries hold it in their own text,
    whatever the scope's size: in a large scope a share still means a long posting list,
    and the second run scores every entry on it. A bound on that run's work, as Lucene's
    MoreLikeThis bounds its terms' document frequency (0: no such rule)."""

    @property
    def enabled(self) -> bool:
        return self.docs > 0 and self.terms > 0 and self.weight > 0


def bounded(query: FtsQuery, config: FeedbackConfig) -> FtsQuery:
    """The expansion run's query: the terms more of the scope holds than `config` allows are
    left out by the store (max_scope_share, max_scope_entries)."""
    return replace(
        query,
        max_term_share=config.max_scope_share,
        max_term_entries=config.max_scope_entries or None,
    )


@lru_cache(maxsize=8)
def _stemmed_stopwords(analyzer: AnalyzerConfig) -> frozenset[str]:
    return frozenset(analyze(" ".join(sorted(analyzer.stopwords)), analyzer))


def feedback_terms(
    query: Sequence[str],
    ranked: Sequence[FtsCandidate],
    admitted: Sequence[int],
    config: FeedbackConfig,
    analyzer: AnalyzerConfig,
) -> list[str]:
    """The expansion terms: own words of the first `docs` admitted entries, scored by how
    many of them hold the word times its rarity among all the channel's candidates."""
    by_key = {c.key: c for c in ranked}
    top = [by_key[key] for key in admitted[: config.docs] if key in by_key]
    if len(top) < config.min_docs:
        return []
    excluded = frozenset(query) | _stemmed_stopwords(analyzer)
    in_top: Counter[str] = Counter()
    for candidate in top:
        in_top.update(
            t
            for t in candidate.tokens
            if len(t) >= MIN_TERM_CHARS and not t.startswith(PREFIXES) and t not in excluded
        )
    # Only words enough feedback entries share can qualify: count just those among the
    # candidates (a handful of set lookups each, not every candidate's every token).
    shared = [term for term, count in in_top.items() if count >= config.min_docs]
    if not shared:
        return []
    total = len(ranked)
    rest = total - len(top)
    scored = []
    for term in shared:
        holding = sum(1 for candidate in ranked if term in candidate.tokens)
        if holding > config.max_share * total:
            continue
        # The lift compares the feedback entries with the other candidates; when every
        # candidate is a feedback entry there is nothing to compare with, and no such rule.
        if rest and in_top[term] / len(top) < config.min_lift * (holding - in_top[term]) / rest:
            continue
        scored.append((in_top[term] * math.log(1.0 + total / holding), term))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [term for _, term in scored[: config.terms]]


def merge_rankings(
    first: Sequence[int], second: Sequence[int], *, weight: float, k: int
) -> list[int]:
    """One ranking from the question's (weight 1) and the expansion's, by reciprocal rank."""
    scores: dict[int, float] = {}
    for rank, key in enumerate(first, start=1):
        scores[key] = 1.0 / (k + rank)
    for rank, key in enumerate(second, start=1):
        scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    order = {key: i for i, key in enumerate((*first, *second))}
    return sorted(scores, key=lambda key: (-scores[key], order[key]))


async def with_feedback(
    query: Sequence[str],
    found: Sequence[FtsCandidate],
    admitted: list[int],
    channel: Callable[[list[str]], Awaitable[list[FtsCandidate]]],
    config: FeedbackConfig,
    analyzer: AnalyzerConfig,
    *,
    k: int,
) -> tuple[list[int], list[FtsCandidate]]:
    """The admitted full-text ranking with the expansion merged in, and the candidates the
    second run found (for explain and participant checks). Unchanged when feedback is off
    or finds no expansion term."""
    if not config.enabled:
        return admitted, []
    expansion = feedback_terms(query, found, admitted, config, analyzer)
    if not expansion:
        return admitted, []
    second = await channel(expansion)
    again = admit(second, (), expansion).keys["fts"]
    merged = merge_rankings(admitted, again, weight=config.weight, k=k)
    return merged, second


async def feed_back(
    admitted: Admission,
    terms: Sequence[str],
    channel: Callable[[list[str]], Awaitable[list[FtsCandidate]]],
    config: FeedbackConfig,
    analyzer: AnalyzerConfig,
    *,
    k: int,
) -> Admission:
    """The feedback stage over one admission: the full-text keys with the expansion merged
    in; the second run's new candidates join `fts_found` (explain, participants)."""
    keys, fed = await with_feedback(
        terms, admitted.fts_found, admitted.keys["fts"], channel, config, analyzer, k=k
    )
    if not fed:
        return admitted
    # Explain reports the question's BM25 (docs/search-quality.md): an entry the question
    # did not admit was found only through the expansion, whose BM25 scores other terms, so
    # its full-text score is 0. Only explain reads these scores; the ranking is `keys`.
    question = frozenset(admitted.keys["fts"])
    known = {c.key for c in admitted.fts_found}
    return Admission(
        fts_found=[
            *(c if c.key in question else c._replace(score=0.0) for c in admitted.fts_found),
            *(c._replace(score=0.0) for c in fed if c.key not in known),
        ],
        vector_found=admitted.vector_found,
        keys={"fts": keys, "vector": admitted.keys["vector"]},
    )
