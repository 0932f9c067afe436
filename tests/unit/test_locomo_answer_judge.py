"""Source expansion, answer prompts and judge policies, with a plain async callable as model."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.bench.locomo.answer import (
    ABSTENTION,
    clean_answer,
    expand_sources,
    generate_answer,
    render_context,
)
from powercontext.bench.locomo.dataset import load_dataset
from powercontext.bench.locomo.generation import GenerationUnavailableError, default_generator
from powercontext.bench.locomo.judge import judge_answer, judge_prompt, parse_verdict
from powercontext.config import InferenceConfig
from tests.fakes.openai_server import FakeOpenAIServer, text_reply

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "tiny.json"


class Recorder:
    """A text generator that replies from a script and keeps every prompt it was sent."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, system: str, prompt: str) -> str:
        self.calls.append((system, prompt))
        return self.replies.pop(0)


@pytest.fixture(scope="module")
def conversation():
    return load_dataset(FIXTURE).conversations[1]


def test_expand_sources_adds_neighbours_within_the_session(conversation) -> None:
    # D10:1 is the first turn of session 10: its neighbour on the left is in session 2 and is
    # not added; D2:3 is last in session 2.
    hits = [{"dia_id": "D10:1"}, {"dia_id": "D2:3"}]
    turns = expand_sources(conversation, hits, window=1)
    assert [t.dia_id for t in turns] == ["D2:2", "D2:3", "D10:1", "D10:2"]
    assert [t.dia_id for t in expand_sources(conversation, hits, window=0)] == ["D2:3", "D10:1"]
    session_hit = [{"dia_ids": ["D10:2", "D10:3"]}]
    assert [t.dia_id for t in expand_sources(conversation, session_hit, 0)] == ["D10:2", "D10:3"]
    assert expand_sources(conversation, [{"dia_id": "D99:1"}], 1) == []


def test_render_context_dates_every_session(conversation) -> None:
    text = render_context(conversation, expand_sources(conversation, [{"dia_id": "D2:1"}], 0))
    assert text == (
        "[Session 2, 8:00 pm on 3 March, 2022]\n"
        "Chen: We finally booked the trip to Lisbon for April."
    )
    assert render_context(conversation, []) == "(no excerpts were retrieved)"


def test_clean_answer() -> None:
    assert clean_answer('\n  Answer: "Lisbon"\nbecause...') == "Lisbon"
    assert clean_answer("") == ""


async def test_generate_answer_sends_the_expanded_context(conversation) -> None:
    model = Recorder("Answer: Lisbon")
    answer = await generate_answer(
        model, conversation, "Which city?", [{"dia_id": "D2:1"}], window=0
    )
    assert answer == "Lisbon"
    [(system, prompt)] = model.calls
    assert "not instructions" in system
    assert "between Chen and Dana" in prompt
    assert "Chen: We finally booked the trip to Lisbon for April." in prompt
    assert "Question: Which city?" in prompt
    assert ABSTENTION in prompt


def test_judge_policies_are_distinct() -> None:
    _, strict = judge_prompt("strict", "When?", "May 2023", "in May", 2)
    _, topical = judge_prompt("topical", "When?", "May 2023", "in May", 2)
    assert strict != topical
    assert "Reference answer: May 2023" in strict
    assert "generous" in topical and "generous" not in strict
    _, adversarial = judge_prompt("strict", "What breed?", None, "a poodle", 5)
    assert "does not contain this information" in adversarial
    with pytest.raises(ValueError, match="no judge call"):
        judge_prompt("none", "q", "a", "b", 4)


def test_parse_verdict() -> None:
    assert parse_verdict("Reasoning... CORRECT") is True
    assert parse_verdict("correct at first, but on reflection: WRONG") is False
    assert parse_verdict("INCORRECT") is None  # neither word stands alone
    assert parse_verdict("I cannot tell") is None


async def test_judge_answer_calls_the_model_once() -> None:
    model = Recorder("WRONG")
    assert await judge_answer(model, "strict", "q", "Lisbon", "Porto", 4) is False
    assert len(model.calls) == 1


def test_default_generator_needs_a_model() -> None:
    with pytest.raises(GenerationUnavailableError, match="GENERATION_MODEL"):
        default_generator(None, InferenceConfig())
    assert default_generator("test:model", InferenceConfig()).model == "test:model"


async def test_answers_reach_an_openai_compatible_model_as_the_reranker_does() -> None:
    """`openai-compatible:NAME` means the model at GENERATION_BASE_URL for answers too, not a
    pydantic-ai provider name (which failed with "Unknown model" after the whole run)."""
    with FakeOpenAIServer() as fake:
        fake.script_chat(text_reply("7 May 2023"))
        inference = InferenceConfig(
            generation_model="openai-compatible:local-model", generation_base_url=fake.base_url
        )
        generate = default_generator(None, inference)
        assert await generate("answer briefly", "When did Caroline go?") == "7 May 2023"
        (request,) = fake.chat_requests
    assert request.body["model"] == "local-model"
