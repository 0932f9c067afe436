"""Query expansion in the vector channel (search.vector_feedback)."""

from __future__ import annotations

import logging

import pytest

from powercontext.memory.ports import VectorCandidate
from powercontext.memory.search.vector_feedback import (
    VectorFeedbackConfig,
    expanded_query,
    with_vector_feedback,
)

TEXTS = {1: "Melanie: we roasted marshmallows", 2: "Caroline: I paint", 3: "x" * 900}


async def _texts(keys: list[int]) -> list[str]:
    return [TEXTS[key] for key in keys if key in TEXTS]


def test_the_expanded_query_is_the_question_then_each_text_cut() -> None:
    assert expanded_query("camping?", ["a", "b" * 10], 4) == "camping?\na\nbbbb"


async def test_the_best_full_text_match_joins_the_question_and_its_ranking_is_merged() -> None:
    asked: list[str] = []

    async def channel(text: str) -> list[VectorCandidate]:
        asked.append(text)
        return [VectorCandidate(9, 0.8), VectorCandidate(5, 0.7), VectorCandidate(8, 0.1)]

    ranked = await with_vector_feedback(
        "camping?",
        [1, 2],
        [4, 5],
        _texts,
        channel,
        VectorFeedbackConfig(docs=1),
        floor=0.3,
        k=20,
    )
    assert asked == ["camping?\nMelanie: we roasted marshmallows"]
    # 5 is found by both and leads; 9 joins from the expansion; 8 is under the floor.
    assert ranked == [5, 4, 9]


async def test_off_without_full_text_matches_or_on_failure_the_ranking_stays() -> None:
    async def failing(text: str) -> list[VectorCandidate]:
        raise RuntimeError("provider down")

    on = VectorFeedbackConfig(docs=1)
    off = VectorFeedbackConfig()
    assert await with_vector_feedback("q", [1], [4], _texts, failing, off, floor=0.3, k=20) == [4]
    assert await with_vector_feedback("q", [], [4], _texts, failing, on, floor=0.3, k=20) == [4]
    assert await with_vector_feedback("q", [7], [4], _texts, failing, on, floor=0.3, k=20) == [4]


async def test_a_failing_expansion_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def failing(text: str) -> list[VectorCandidate]:
        raise RuntimeError("provider down")

    with caplog.at_level(logging.WARNING, logger="powercontext.memory.search"):
        ranked = await with_vector_feedback(
            "q", [1], [4], _texts, failing, VectorFeedbackConfig(docs=1), floor=0.3, k=20
        )
    assert ranked == [4]
    assert "RuntimeError" in caplog.text
