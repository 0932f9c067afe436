"""Fitting the by-class candidate limits: chosen on the fit rows only, judged against the curve."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.bench.locomo.class_fit import fit_class_limits, main, split_report
from powercontext.bench.locomo.tradeoff import QuestionRow, curve_margin, policy_table


def _row(conversation: str, query_class: str, recall_by_limit: dict[int, float]) -> QuestionRow:
    # Prompt size grows with the limit exactly as the fixed points do: 100 chars a candidate.
    return {
        "conversation": conversation,
        "question": 0,
        "category": 1,
        "category_name": "multi-hop",
        "query_class": query_class,
        "limits": {
            str(c): {"pool_recall": r, "prompt_chars": 100.0 * c, "candidates": float(c)}
            for c, r in recall_by_limit.items()
        },
    }


# Time questions are answered by a small pool; list questions need the deepest one.
SATURATED = {10: 1.0, 20: 1.0, 30: 1.0, 40: 1.0, 50: 1.0}
DEEP = {10: 0.0, 20: 0.0, 30: 0.0, 40: 0.0, 50: 1.0}


def _rows(conversation: str) -> list[QuestionRow]:
    return [_row(conversation, "time", SATURATED) for _ in range(10)] + [
        _row(conversation, "list", DEEP) for _ in range(10)
    ]


def test_fit_gives_each_class_the_pool_it_needs() -> None:
    fitted = fit_class_limits(_rows("a"), min_questions=10)
    assert fitted["time"] == 10 and fitted["list"] == 50
    table = policy_table(_rows("a"), fitted, (10, 20, 30, 40, 50))
    assert curve_margin(table) > 0.4  # full recall at the prompt size of fixed-30 (recall 0.5)


def test_a_class_seen_too_rarely_follows_one_fact() -> None:
    rows = [_row("a", "one_fact", SATURATED) for _ in range(10)] + [_row("a", "count", DEEP)]
    fitted = fit_class_limits(rows, min_questions=10)
    assert fitted["count"] == fitted["one_fact"] == 10


def test_held_out_rows_never_reach_the_fit(tmp_path: Path) -> None:
    # Held-out list questions are saturated: fitted on them, list would get 10, not 50.
    held_out = [_row("b", "list", SATURATED) for _ in range(30)]
    fitted = fit_class_limits([r for r in _rows("a") + held_out if r["conversation"] == "a"])
    report = split_report(_rows("a") + held_out, ["a"], {"fitted": fitted})
    assert fitted["list"] == 50
    assert report["fitted"]["fit"]["questions"] == 20
    assert report["fitted"]["held_out"]["questions"] == 30
    # On the held-out rows the deep list pool buys nothing: fixed-50's prompt, no margin.
    assert report["fitted"]["held_out"]["prompt_chars"] == 5000
    assert report["fitted"]["held_out"]["curve_margin"] == 0


def test_cli_reuses_saved_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    rows = tmp_path / "rows.json"
    facts = {"data": "x", "tokens": "not measured"}
    rows.write_text(json.dumps({"facts": facts, "rows": _rows("a") + _rows("b")}), "utf-8")
    main(["--data", "x", "--rows", str(rows), "--fit-on", "a", "--out", str(tmp_path / "o")])
    written = json.loads((tmp_path / "o" / "class_fit.json").read_text(encoding="utf-8"))
    assert written["fitted_limits"]["list"] == 50
    assert set(written["splits"]["fitted"]) == {"fit", "held_out", "all"}
    assert (tmp_path / "o" / "tradeoff.md").exists()
    assert "Fitted on a" in capsys.readouterr().out
