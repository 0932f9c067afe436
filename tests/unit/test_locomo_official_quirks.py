"""The quirks of the official `locomo10.json` (Maharana et al., ACL 2024, CC BY-NC 4.0), each
reproduced on a hand-made conversation in the official shape: nothing may crash, and nothing
may be dropped without being counted.

The shapes are the published file's: `"D8:6; D9:17"` and `"D9:1 D4:4 D4:6"` (joined ids),
`"D:11:26"` (a stray colon, conv-43), a bare `"D"` (conv-42), `"D10:19"` naming no turn
(conv-42), integer answers, category 5 with `adversarial_answer` only, image turns with
`img_url`, `query` and `blip_caption`, date keys without a session (conv-26) and the top-level
`observation`, `session_summary` and `event_summary`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from powercontext.bench.locomo.dataset import parse_dataset, parse_session_date
from powercontext.bench.locomo.ingest import plan_ingest
from powercontext.bench.locomo.judge import judge_prompt

OFFICIAL_SHAPE: list[dict[str, Any]] = [
    {
        "sample_id": "conv-q",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group."},
                {
                    "speaker": "Melanie",
                    "dia_id": "D1:2",
                    "text": "",
                    "img_url": ["https://example.invalid/sunset.jpg"],
                    "blip_caption": "a photo of a painting of a sunset",
                    "query": "sunset painting",
                },
                {"speaker": "Caroline", "dia_id": "D1:3", "text": ""},
                {"dia_id": "D1:4", "text": "Who said this?"},
            ],
            "session_2_date_time": "12:05 am on 1 January, 2024",
            "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "Happy new year!"}],
            "session_11_date_time": "12:30 pm on 3 Sept, 2024",
            "session_11": [
                {"speaker": "Caroline", "dia_id": "D11:25", "text": "I ran a charity race."},
                {"speaker": "Melanie", "dia_id": "D11:26", "text": "For what cause?"},
            ],
            "session_3_date_time": "sometime in spring",
            "session_3": [{"speaker": "Melanie", "dia_id": "D3:1", "text": "Spring!"}],
            "session_4": None,
            "session_35_date_time": "9:00 am on 1 March, 2025",
        },
        "qa": [
            {"question": "stray colon", "answer": "a", "evidence": ["D:11:26"], "category": 4},
            {"question": "junk part", "answer": "a", "evidence": ["D1:1; D"], "category": 1},
            {"question": "blanks", "answer": "a", "evidence": ["D11:25 D2:1 D"], "category": 1},
            {"question": "no turn", "answer": "a", "evidence": ["D1:1", "D10:19"], "category": 1},
            {"question": "unwritten", "answer": "a", "evidence": ["D1:3"], "category": 4},
            {"question": "repeated", "answer": 2022, "evidence": ["D2:1", "D2:1"], "category": 2},
            {
                "question": "adversarial",
                "adversarial_answer": 3,
                "evidence": ["D1:2"],
                "category": 5,
            },
            {"question": "no gold", "evidence": ["D1:1"], "category": 3},
        ],
        "observation": {"session_1_observation": {"Caroline": [["went to a group", "D1:1"]]}},
        "session_summary": {"session_1_summary": "Caroline and Melanie talked."},
        "event_summary": {"events_session_1": {"Caroline": [], "date": "8 May, 2023"}},
    }
]


@pytest.fixture()
def loaded() -> Iterator[Any]:
    yield parse_dataset(copy.deepcopy(OFFICIAL_SHAPE))


def _qa(dataset: Any) -> dict[str, Any]:
    return {item.question: item for item in dataset.conversations[0].qa}


def test_evidence_quirks_keep_every_good_id_and_count_the_rest(loaded: Any) -> None:
    qa = _qa(loaded)
    assert qa["stray colon"].evidence == ("D11:26",)
    assert qa["junk part"].evidence == ("D1:1",)
    assert qa["blanks"].evidence == ("D11:25", "D2:1")
    assert qa["repeated"].evidence == ("D2:1",)
    counts = loaded.issues.counts
    assert counts["evidence_reformatted"] == 1  # D:11:26
    assert counts["evidence_split"] == 2
    assert counts["evidence_unparseable"] == 2  # the two bare "D"
    assert counts["evidence_duplicate"] == 1
    assert "conv-q qa[0] 'D:11:26' -> D11:26" in loaded.issues.examples["evidence_reformatted"]


def test_an_id_naming_no_written_turn_makes_its_item_unscorable(loaded: Any) -> None:
    qa = _qa(loaded)
    # Scoring D1:1 alone would report a hit (or miss) against an incomplete gold.
    assert qa["no turn"].evidence == ()
    assert qa["no turn"].unresolved_evidence == ("D10:19",)
    # D1:3 is in the file but has no text, so it was never written: labelled apart.
    assert qa["unwritten"].evidence == ()
    assert qa["unwritten"].unresolved_evidence == ("D1:3",)
    counts = loaded.issues.counts
    assert counts["evidence_unknown_id"] == 1
    assert counts["evidence_unwritten_turn"] == 1
    assert counts["turn_without_text"] == 1
    assert counts["qa_evidence_unresolved"] == 2
    assert set(loaded.issues.examples["qa_evidence_unresolved"]) == {
        "conv-q qa[3] D10:19",
        "conv-q qa[4] D1:3",
    }


def test_answers_integer_adversarial_and_missing(loaded: Any) -> None:
    qa = _qa(loaded)
    assert qa["repeated"].answer == "2022"
    assert qa["adversarial"].answer is None
    assert qa["adversarial"].adversarial_answer == "3"
    assert qa["no gold"].answer is None
    counts = loaded.issues.counts
    assert counts["non_string_answer"] == 1
    assert counts["non_string_adversarial_answer"] == 1
    assert counts["adversarial_without_answer"] == 1
    assert counts["qa_without_answer"] == 1


def test_sessions_dates_and_structure(loaded: Any) -> None:
    conversation = loaded.conversations[0]
    assert [s.number for s in conversation.sessions] == [1, 2, 3, 11]
    when = {s.number: s.occurred_at for s in conversation.sessions}
    assert when == {
        1: datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        2: datetime(2024, 1, 1, 0, 5, tzinfo=UTC),  # 12 am is midnight
        3: None,
        11: datetime(2024, 9, 3, 12, 30, tzinfo=UTC),  # 12 pm is noon; "Sept" is September
    }
    counts = loaded.issues.counts
    assert counts["session_date_unparseable"] == 1
    assert loaded.issues.examples["session_date_unparseable"] == [
        "conv-q session_3 'sometime in spring'"
    ]
    assert counts["session_not_a_list"] == 1
    assert counts["session_date_without_session"] == 1  # session_35 (session_4 is not a list)
    assert counts["turn_without_speaker"] == 1
    assert conversation.turns_by_id["D1:4"].speaker == "unknown"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
        (" 8:56 PM on 20 July 2023 ", datetime(2023, 7, 20, 20, 56, tzinfo=UTC)),
        ("1:00 pm on 1 Feb, 2024", datetime(2024, 2, 1, 13, 0, tzinfo=UTC)),
        ("1:00 pm on 31 June, 2024", None),
        ("13:00 pm on 1 May, 2024", None),
        ("1:00 pm on 1 Mayo, 2024", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_session_date(text: str | None, expected: datetime | None) -> None:
    assert parse_session_date(text) == expected


def test_written_entries_carry_caption_thread_and_date_but_not_the_image_query(
    loaded: Any,
) -> None:
    conversation = loaded.conversations[0]
    requests = {r.metadata["dia_id"]: r for r in plan_ingest(conversation, "turn").requests}
    assert "D1:3" not in requests  # no text and no caption: counted above, not written
    image = requests["D1:2"]
    assert image.text == "Melanie: and shared a photo of a painting of a sunset."
    assert "sunset painting" not in image.text and "example.invalid" not in image.text
    assert image.thread == "conv-q/session-1"
    assert image.occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert requests["D3:1"].occurred_at is None
    assert requests["D3:1"].metadata["session_date"] == "sometime in spring"
    # The top-level summaries and observations are not conversation turns.
    assert len(requests) == 7


def test_the_judge_refuses_an_answerable_item_without_a_reference() -> None:
    with pytest.raises(ValueError, match="needs a reference"):
        judge_prompt("strict", "What did Caroline paint?", None, "Not mentioned.", 4)
    _, prompt = judge_prompt("strict", "What breed?", None, "Not mentioned.", 5)
    assert "does not contain this information" in prompt
