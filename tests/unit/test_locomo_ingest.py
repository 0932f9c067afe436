"""Ingestion plans: entry text, metadata, granularity, scope naming and evidence coverage."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.bench.locomo.dataset import Session, Turn, load_dataset
from powercontext.bench.locomo.ingest import (
    covered_dia_ids,
    plan_ingest,
    session_requests,
)
from powercontext.memory.values import MAX_TEXT_BYTES

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "tiny.json"


@pytest.fixture(scope="module")
def conversation():
    return load_dataset(FIXTURE).conversations[0]


def test_turn_line_carries_speaker_and_caption() -> None:
    plain = Turn(dia_id="D1:1", session=1, position=0, speaker="Alice", text="Hello there.")
    assert plain.line == "Alice: Hello there."
    shared = Turn(
        dia_id="D1:2",
        session=1,
        position=1,
        speaker="Bob",
        text="Look!",
        caption="a photo of a cat",
    )
    assert shared.line == "Bob: Look! and shared a photo of a cat."


def test_turn_granularity_one_entry_per_turn(conversation) -> None:
    plan = plan_ingest(conversation, "turn")
    assert len(plan.requests) == 6
    first = plan.requests[0]
    assert first.kind == "turn"
    assert first.text == "Alice: I adopted a puppy named Biscuit yesterday."
    assert first.metadata == {
        "sample_id": "conv-a",
        "dia_id": "D1:1",
        "session": 1,
        "session_date": "1:56 pm on 8 May, 2023",
        "speaker": "Alice",
    }
    assert plan.requests[2].text.endswith(
        "and shared a photo of a golden retriever puppy on the grass."
    )
    assert plan.requests[3].metadata["session_date"] == "10:00 am on 20 June, 2023"
    assert plan.scope_id.startswith("locomo-conv-a-turn-")


def test_session_granularity_one_entry_per_session(conversation) -> None:
    plan = plan_ingest(conversation, "session")
    assert [r.kind for r in plan.requests] == ["session", "session"]
    first = plan.requests[0]
    assert first.text.splitlines()[0] == "Alice: I adopted a puppy named Biscuit yesterday."
    assert len(first.text.splitlines()) == 3
    assert first.metadata["dia_ids"] == ["D1:1", "D1:2", "D1:3"]
    assert first.metadata["session"] == 1
    assert "part" not in first.metadata
    assert plan.session_chunks == 0


def test_an_oversized_session_is_split_into_consecutive_chunks(conversation) -> None:
    turns = tuple(
        Turn(dia_id=f"D7:{i}", session=7, position=i - 1, speaker="Alice", text="x" * 90)
        for i in range(1, 5)
    )
    session = Session(7, "today", turns)
    # each line is "Alice: " + 90 x = 97 bytes + newline = 98; a 200-byte budget fits 2
    parts = session_requests(conversation, session, budget=200)
    assert [p.metadata["dia_ids"] for p in parts] == [["D7:1", "D7:2"], ["D7:3", "D7:4"]]
    assert [p.metadata["part"] for p in parts] == [1, 2]
    assert all(len(p.text.encode()) <= 200 for p in parts)


def test_a_single_turn_longer_than_the_bound_is_cut(conversation) -> None:
    session = Session(
        8, None, (Turn(dia_id="D8:1", session=8, position=0, speaker="Bob", text="é" * 5000),)
    )
    [request] = session_requests(conversation, session)
    assert len(request.text.encode()) <= MAX_TEXT_BYTES


def test_scope_id_names_the_content(conversation) -> None:
    again = plan_ingest(conversation, "turn")
    assert again.scope_id == plan_ingest(conversation, "turn").scope_id
    assert plan_ingest(conversation, "session").scope_id != again.scope_id
    other = load_dataset(FIXTURE).conversations[1]
    assert plan_ingest(other, "turn").scope_id.startswith("locomo-conv-b-turn-")


def test_covered_dia_ids() -> None:
    assert covered_dia_ids({"dia_id": "D1:1"}) == {"D1:1"}
    assert covered_dia_ids({"dia_ids": ["D1:1", "D1:2"], "session": 1}) == {"D1:1", "D1:2"}
    assert covered_dia_ids({}) == frozenset()
