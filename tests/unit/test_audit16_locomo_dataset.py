"""Audit 16 of the LoCoMo loader on shapes a held-out file in the official format may hold:
zero-padded session keys, a turn longer than the entry bound, and quirks counted per
conversation so a run over a selection reports its own exclusions only."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.bench.locomo.dataset import DatasetError, parse_dataset
from powercontext.bench.locomo.ingest import plan_ingest
from powercontext.memory.values import MAX_TEXT_BYTES


def _turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


def _sample(sample_id: str, conversation: dict[str, Any], qa: list[Any]) -> dict[str, Any]:
    body = {"speaker_a": "Ann", "speaker_b": "Bob", **conversation}
    return {"sample_id": sample_id, "conversation": body, "qa": qa}


def test_zero_padded_session_keys_are_read_with_their_dates() -> None:
    sample = _sample(
        "pad",
        {
            "session_01_date_time": "1:56 pm on 8 May, 2023",
            "session_01": [_turn("Ann", "D1:1", "I adopted a quokka.")],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [_turn("Bob", "D2:1", "Nice.")],
        },
        [{"question": "What?", "answer": "a quokka", "evidence": ["D1:1"], "category": 4}],
    )
    dataset = parse_dataset([sample])
    conversation = dataset.conversations[0]
    assert [s.number for s in conversation.sessions] == [1, 2]
    first = conversation.sessions[0]
    assert first.date_time == "1:56 pm on 8 May, 2023" and first.occurred_at is not None
    assert conversation.qa[0].evidence == ("D1:1",)
    assert not dataset.issues.counts["session_without_date"]
    assert not dataset.issues.counts["session_date_without_session"]


def test_two_keys_naming_one_session_number_are_refused() -> None:
    sample = _sample(
        "dup",
        {"session_1": [_turn("Ann", "D1:1", "a")], "session_01": [_turn("Bob", "D1:1", "b")]},
        [{"question": "Q?", "answer": "a", "evidence": ["D1:1"], "category": 4}],
    )
    with pytest.raises(DatasetError, match=r"`session_1` and `session_01` name one session"):
        parse_dataset([sample])


def test_a_turn_longer_than_the_entry_bound_is_cut_and_counted() -> None:
    long_text = "word " * 3000
    sample = _sample(
        "long",
        {"session_1": [_turn("Ann", "D1:1", long_text), _turn("Bob", "D1:2", "Short.")]},
        [{"question": "Q?", "answer": "a", "evidence": ["D1:1"], "category": 4}],
    )
    dataset = parse_dataset([sample])
    assert dataset.issues.counts["turn_text_cut"] == 1
    assert dataset.issues.examples["turn_text_cut"][0].startswith("long session_1[0] D1:1")
    plan = plan_ingest(dataset.conversations[0], "turn")
    first = plan.requests[0]
    assert len(first.text.encode("utf-8")) <= MAX_TEXT_BYTES
    assert first.text.startswith("Ann: word word")
    assert plan.requests[1].text == "Bob: Short."


def test_quirks_are_counted_per_conversation() -> None:
    quirky = _sample(
        "quirky",
        {"session_1": [_turn("Ann", "D1:1", "a")]},
        [
            {"question": "Q?", "answer": "a", "evidence": ["D9:9"], "category": 1},
            {"question": "Q2?", "answer": 7, "evidence": ["D1:1"], "category": 2},
        ],
    )
    clean = _sample(
        "clean",
        {"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [_turn("A", "D1:1", "b")]},
        [{"question": "Q?", "answer": "b", "evidence": ["D1:1"], "category": 4}],
    )
    dataset = parse_dataset([quirky, clean])
    assert dataset.issues.counts["qa_evidence_unresolved"] == 1
    assert dataset.issues_for(["clean"]).counts == {}
    only = dataset.issues_for(["quirky"])
    assert only.counts == dataset.issues.counts
    assert only.counts["non_string_answer"] == 1 and only.counts["session_without_date"] == 1
    assert only.examples["qa_evidence_unresolved"] == ["quirky qa[0] D9:9"]
