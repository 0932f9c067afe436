"""Audit 16: the `bench locomo` command end to end (hash embedder) on inputs a held-out file in
the official format may hold. Each must run to results that say what was left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from powercontext.cli import app as root_app


def _turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


def _sample(sample_id: str, conversation: dict[str, Any], qa: list[Any]) -> dict[str, Any]:
    body = {"speaker_a": "Ann", "speaker_b": "Bob", **conversation}
    return {"sample_id": sample_id, "conversation": body, "qa": qa}


def _cli(tmp_path: Path, payload: Any, *extra: str) -> tuple[Any, dict[str, Any]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "in.json"
    data.write_text(json.dumps(payload), "utf-8")
    out = tmp_path / "o"
    args = ["bench", "locomo", "--data", str(data), "--out", str(out), "--no-progress"]
    env = {"POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash"}
    result = CliRunner().invoke(
        root_app, [*args, "--top-k", "5", "--answer-k", "2", *extra], env=env
    )
    assert result.exit_code == 0, (result.output, repr(result.exception))
    return result, json.loads((out / "results.json").read_text(encoding="utf-8"))


SPOKEN = _sample(
    "spoken",
    {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [_turn("Ann", "D1:1", "I adopted a quokka named Milo.")],
    },
    [
        {
            "question": "What did Ann adopt?",
            "answer": "a quokka",
            "evidence": ["D1:1"],
            "category": 4,
        }
    ],
)


def test_a_conversation_with_no_written_turn_runs_and_its_questions_are_unscorable(
    tmp_path: Path,
) -> None:
    silent = _sample(
        "silent",
        {
            "session_1_date_time": "1:00 pm on 1 May, 2023",
            "session_1": [],
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": ""}],
        },
        [{"question": "What was said?", "answer": "x", "evidence": ["D2:1"], "category": 4}],
    )
    for write in ("turns", "batch"):
        _, results = _cli(tmp_path / write, [silent, SPOKEN], "--write", write, "--mode", "fts")
        assert results["ingest"]["silent"]["entries"] == 0
        assert results["dataset"]["questions_with_unresolved_evidence"] == 1
        assert results["retrieval"]["scored_questions"] == 1
        assert results["dataset"]["issues"]["counts"]["conversation_without_turns"] == 1


def test_a_turn_longer_than_the_entry_bound_is_written_cut(tmp_path: Path) -> None:
    long = _sample(
        "long",
        {"session_1": [_turn("Ann", "D1:1", "quokka " * 2000), _turn("Bob", "D1:2", "Wow.")]},
        [{"question": "What quokka?", "answer": "x", "evidence": ["D1:1"], "category": 4}],
    )
    _, results = _cli(tmp_path, [long], "--mode", "fts")
    assert results["ingest"]["long"]["entries"] == 2
    assert results["dataset"]["issues"]["counts"]["turn_text_cut"] == 1
    assert results["retrieval"]["final"]["by_category"]["overall"]["hit@2"] == 1.0


def test_a_selected_conversation_reports_only_its_own_exclusions(tmp_path: Path) -> None:
    other = _sample(
        "other",
        {"session_1": [_turn("Ann", "D1:1", "Hello.")]},
        [
            {"question": "Gone?", "answer": "x", "evidence": ["D10:19"], "category": 1},
            {"question": "Seven?", "answer": "x", "evidence": ["D1:1"], "category": 7},
        ],
    )
    result, results = _cli(tmp_path, [other, SPOKEN], "--conversation", "spoken", "--mode", "fts")
    counts = results["dataset"]["issues"]["counts"]
    assert "qa_evidence_unresolved" not in counts and "qa_unknown_category" not in counts
    assert "session_without_date" not in counts
    assert "left out" not in result.stderr
    report = (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    assert "other" not in report.split("## Dataset quirks handled")[1]
