"""LoCoMo loading and every quirk of the published file, on hand-made conversations."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from powercontext.bench.locomo.dataset import (
    DatasetError,
    DatasetIssues,
    canonical_dia_id,
    load_dataset,
    normalize_evidence,
    parse_dataset,
)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "tiny.json"
DEV_FILE = Path(__file__).parents[3] / "shared" / "data" / "locomo" / "locomo-dev.json"


@pytest.fixture(scope="module")
def tiny():
    return load_dataset(FIXTURE)


def test_loads_conversations_sessions_and_turns(tiny) -> None:
    assert [c.sample_id for c in tiny.conversations] == ["conv-a", "conv-b"]
    first = tiny.conversations[0]
    assert (first.speaker_a, first.speaker_b) == ("Alice", "Bob")
    assert [s.number for s in first.sessions] == [1, 2]
    assert first.sessions[0].date_time == "1:56 pm on 8 May, 2023"
    assert first.turn_count == 6
    turn = first.turns_by_id["D1:3"]
    assert (turn.session, turn.position, turn.speaker) == (1, 2, "Alice")
    assert turn.caption == "a photo of a golden retriever puppy on the grass"
    assert first.turns_by_id["D1:1"].caption is None
    assert len(tiny.sha256) == 64
    assert tiny.question_count == 12


def test_session_dates_parse_to_utc_moments_and_odd_ones_to_none(tiny) -> None:
    first = tiny.conversations[0].sessions[0]
    assert first.occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert replace(first, date_time="sometime in May").occurred_at is None
    assert replace(first, date_time=None).occurred_at is None


def test_sessions_are_enumerated_from_their_keys_in_numeric_order(tiny) -> None:
    # conv-b has session_2 and session_10 only: "10" must sort after "2", and no gap is filled.
    second = tiny.conversations[1]
    assert [s.number for s in second.sessions] == [2, 10]
    assert second.session(10) is not None
    assert second.session(3) is None


def test_a_date_key_without_its_session_is_counted_not_invented(tiny) -> None:
    assert [s.number for s in tiny.conversations[0].sessions] == [1, 2]
    assert tiny.issues.counts["session_date_without_session"] == 1
    assert tiny.issues.examples["session_date_without_session"] == ["conv-a session_3_date_time"]


def test_evidence_quirks_are_normalised_or_counted(tiny) -> None:
    qa = {item.index: item for item in tiny.conversations[0].qa}
    assert qa[0].evidence == ("D1:1",)
    assert qa[1].evidence == ("D1:1",)  # "D1:01": zero padding removed
    assert qa[2].evidence == ("D1:1", "D2:1")  # "D1:1; D2:1": split in two
    assert qa[2].raw_evidence == ("D1:1; D2:1",)
    # "D9:9" names no turn: the gold is incomplete, so the item is unscorable, not half-scored
    assert qa[3].evidence == ()
    assert qa[3].unresolved_evidence == ("D9:9",)
    assert qa[5].evidence == ()  # "D" cannot be parsed
    assert qa[6].evidence == ()  # no evidence in the file
    counts = tiny.issues.counts
    assert counts["evidence_reformatted"] == 1
    assert counts["evidence_split"] == 1
    assert counts["evidence_unknown_id"] == 1
    assert counts["evidence_unparseable"] == 1
    assert counts["qa_without_evidence"] == 1
    assert counts["qa_evidence_all_invalid"] == 1
    assert counts["qa_evidence_unresolved"] == 1


def test_answer_quirks(tiny) -> None:
    qa = {item.index: item for item in tiny.conversations[0].qa}
    assert qa[3].answer == "1"  # a JSON integer, scored as text
    assert tiny.issues.counts["non_string_answer"] == 1
    adversarial = qa[4]
    assert adversarial.category == 5
    assert adversarial.answer is None
    assert adversarial.adversarial_answer == "golden retriever"
    assert adversarial.category_name == "adversarial"
    # one in each conversation of the fixture
    assert tiny.issues.counts["adversarial_without_answer"] == 2


def test_canonical_dia_id() -> None:
    assert canonical_dia_id("D30:05") == "D30:5"
    assert canonical_dia_id(" D 4 : 7 ") == "D4:7"
    assert canonical_dia_id("D4") is None
    assert canonical_dia_id("D1:2; D1:3") is None


def test_normalize_evidence_keeps_order_and_drops_duplicates() -> None:
    issues = DatasetIssues()
    kept = normalize_evidence(["D2:1, D1:1", "D1:01", "S3:1"], {"D1:1", "D2:1"}, issues, "where")
    assert kept == ("D2:1", "D1:1")
    assert issues.counts["evidence_split"] == 1
    assert issues.counts["evidence_duplicate"] == 1
    assert issues.counts["evidence_unparseable"] == 1


def _sample(**overrides: object) -> dict[str, object]:
    sample: dict[str, object] = {
        "sample_id": "s",
        "conversation": {
            "speaker_a": "A",
            "speaker_b": "B",
            "session_1_date_time": "d",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hello"}],
        },
        "qa": [],
    }
    sample.update(overrides)
    return sample


def test_structural_errors_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="non-empty JSON list"):
        parse_dataset({"qa": []})
    with pytest.raises(DatasetError, match="no `conversation`"):
        parse_dataset([{"qa": []}])
    with pytest.raises(DatasetError, match="no `session_N`"):
        parse_dataset([_sample(conversation={"speaker_a": "A", "session_1_date_time": "d"})])
    with pytest.raises(DatasetError, match="occurs twice"):
        parse_dataset([_sample(), _sample()])
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(DatasetError, match="not JSON"):
        load_dataset(broken)
    with pytest.raises(DatasetError, match="cannot read"):
        load_dataset(tmp_path / "missing.json")


def test_unusable_items_and_turns_are_counted_and_skipped() -> None:
    sample = _sample(
        qa=[
            {"question": "", "answer": "x", "evidence": ["D1:1"], "category": 4},
            {"question": "q", "answer": "x", "evidence": ["D1:1"], "category": 9},
            {"question": "q", "evidence": ["D1:1"], "category": 2},
        ]
    )
    sample["conversation"]["session_1"].append({"speaker": "B", "text": "no id"})  # type: ignore[index]
    sample["conversation"]["session_1"].append({"speaker": "B", "dia_id": "D1:1", "text": "again"})  # type: ignore[index]
    dataset = parse_dataset([sample])
    assert [item.index for item in dataset.conversations[0].qa] == [2]
    assert dataset.conversations[0].qa[0].answer is None
    counts = dataset.issues.counts
    assert counts["qa_without_question"] == 1
    assert counts["qa_unknown_category"] == 1
    assert counts["qa_without_answer"] == 1
    assert counts["turn_without_dia_id"] == 1
    assert counts["duplicate_dia_id"] == 1
    assert dataset.conversations[0].turns_by_id["D1:1"].text == "hello"


def test_issue_report_is_json_serialisable(tiny) -> None:
    encoded = json.dumps(tiny.issues.as_dict())
    assert "evidence_split" in encoded


@pytest.mark.skipif(not DEV_FILE.exists(), reason="development data not present")
def test_development_file_quirks() -> None:
    dataset = load_dataset(DEV_FILE)
    assert [c.sample_id for c in dataset.conversations] == [
        "conv-26",
        "conv-30",
        "conv-41",
        "conv-42",
    ]
    assert dataset.question_count == 757
    counts = dataset.issues.counts
    assert counts["evidence_split"] == 1  # conv-26 "D8:6; D9:17"
    assert counts["evidence_unknown_id"] == 1  # conv-42 "D10:19"
    assert counts["evidence_unparseable"] == 1  # conv-42 "D"
    assert counts["session_date_without_session"] == 16  # conv-26: dates 20-35, 19 sessions
    # 173 category-5 items, of which two in conv-26 also carry an `answer`
    assert counts["adversarial_without_answer"] == 171
    assert counts["non_string_answer"] > 0
