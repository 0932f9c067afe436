"""Pseudo-relevance feedback in the full-text channel (search.feedback)."""

from __future__ import annotations

from powercontext.memory.ports import FtsCandidate
from powercontext.memory.search.analyze import AnalyzerConfig
from powercontext.memory.search.feedback import (
    FeedbackConfig,
    feedback_terms,
    merge_rankings,
    with_feedback,
)

ANALYZER = AnalyzerConfig()


def _fts(key: int, *tokens: str) -> FtsCandidate:
    return FtsCandidate(key=key, score=1.0 / key, tokens=frozenset(tokens))


FOUND = [
    _fts(1, "camp", "tent", "marshmallow", "carolin", "the"),
    _fts(2, "camp", "tent", "marshmallow", "@carolin", "_fire"),
    _fts(3, "camp", "fire", "carolin", "lake"),
    _fts(4, "camp", "carolin", "paint"),
    _fts(5, "camp", "carolin", "paint"),
    _fts(6, "camp", "carolin", "paint"),
]


def test_expansion_terms_are_shared_specific_own_words_of_the_first_entries() -> None:
    config = FeedbackConfig(docs=3, terms=10)
    terms = feedback_terms(["camp"], FOUND, [1, 2, 3, 4, 5, 6], config, ANALYZER)
    # "tent" and "marshmallow" are in two of the first three and nowhere else; "carolin" is
    # in them too but in every candidate (more than half: says nothing); "fire" is own text
    # once and a neighbour's once; "the" is a stop word; "camp" is the query's own; "lake"
    # is in one entry only.
    assert terms == ["marshmallow", "tent"]
    assert feedback_terms(["camp"], FOUND, [1, 2, 3], FeedbackConfig(terms=1), ANALYZER) == [
        "marshmallow"
    ]


def test_only_admitted_entries_are_read_as_relevant() -> None:
    terms = feedback_terms(["camp"], FOUND, [4, 5, 6], FeedbackConfig(docs=3), ANALYZER)
    assert terms == ["paint"]  # in half the candidates: still specific enough
    assert feedback_terms(["camp"], FOUND, [1], FeedbackConfig(docs=5), ANALYZER) == []


def test_a_word_no_commoner_among_the_feedback_entries_than_elsewhere_is_not_a_term() -> None:
    # "note" is in 2 of the first 3 (0.67) and in 3 of the 7 other candidates (0.43): under
    # twice as common where the question matched best, so a scope-wide word, not the topic's.
    found = [
        _fts(1, "topic", "note", "tent"),
        _fts(2, "topic", "note", "tent"),
        _fts(3, "topic", "lake"),
        *(_fts(key, "topic", "note") for key in range(4, 7)),
        *(_fts(key, "topic", f"other{key}") for key in range(7, 11)),
    ]
    keys = list(range(1, 11))
    assert feedback_terms(["topic"], found, keys, FeedbackConfig(terms=10), ANALYZER) == ["tent"]
    relaxed = FeedbackConfig(terms=10, min_lift=1.0)
    assert feedback_terms(["topic"], found, keys, relaxed, ANALYZER) == ["tent", "note"]
    # Every candidate read as relevant: nothing to compare with, the rule does not apply.
    every = FeedbackConfig(docs=10, terms=10)
    assert "note" in feedback_terms(["topic"], found, keys, every, ANALYZER)


def test_the_expansion_ranking_joins_behind_the_question_s_own() -> None:
    # 3 is found by both and climbs; 9, found by the expansion only, comes last.
    assert merge_rankings([1, 2, 3], [9, 3], weight=0.5, k=20) == [3, 1, 2, 9]
    assert merge_rankings([1, 2], [], weight=0.5, k=20) == [1, 2]
    assert merge_rankings([], [9, 8], weight=0.5, k=20) == [9, 8]


async def test_the_channel_runs_again_with_the_expansion_and_admits_by_it() -> None:
    asked: list[list[str]] = []
    second = [
        _fts(7, "marshmallow", "tent", "lake"),
        _fts(8, "lake"),  # no expansion term: not admitted
    ]

    async def channel(terms: list[str]) -> list[FtsCandidate]:
        asked.append(terms)
        return second

    config = FeedbackConfig(docs=3, terms=3)
    ranked, fed = await with_feedback(["camp"], FOUND, [1, 2, 3], channel, config, ANALYZER, k=20)
    assert asked == [["marshmallow", "tent"]]
    assert ranked == [1, 2, 3, 7]
    assert fed == second


async def test_feedback_off_or_without_terms_leaves_the_ranking_alone() -> None:
    async def channel(terms: list[str]) -> list[FtsCandidate]:
        raise AssertionError("the channel must not run again")

    off = FeedbackConfig(docs=0)
    assert await with_feedback(["camp"], FOUND, [1, 2], channel, off, ANALYZER, k=20) == (
        [1, 2],
        [],
    )
    lone = [_fts(1, "camp", "tent"), _fts(2, "camp", "lake")]
    assert await with_feedback(
        ["camp"], lone, [1, 2], channel, FeedbackConfig(), ANALYZER, k=20
    ) == ([1, 2], [])
