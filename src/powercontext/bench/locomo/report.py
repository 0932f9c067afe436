"""Results: scores computed from the per-question records, written as results.json, a Markdown
report (see markdown.py) and a PNG chart (see chart.py)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from powercontext import __version__
from powercontext.bench.locomo.dataset import CATEGORY_NAMES, Dataset
from powercontext.bench.locomo.metrics import aggregate, cutoffs, score_ranking, summary

ATTRIBUTION = (
    'LoCoMo: Maharana, Lee, Tulyakov, Bansal, Barbieri and Fang, "Evaluating Very Long-Term '
    'Conversational Memory of LLM Agents", ACL 2024. Data licensed CC BY-NC 4.0.'
)
RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"
CHART_FILE = "recall.png"


@dataclass(frozen=True, slots=True)
class ReportPaths:
    results: Path
    report: Path
    chart: Path | None  # None when matplotlib is not installed


def _ranking(ids: Sequence[Sequence[str]]) -> list[frozenset[str]]:
    return [frozenset(hit) for hit in ids]


def _retrieval(
    records: Sequence[dict[str, Any]], ks: Sequence[int], answer_k: int, coarse_observable: bool
) -> dict[str, Any]:
    scored = [r for r in records if r["evidence"]]
    coarse_rows = [
        (r["category"], score_ranking(_ranking(r["coarse"]), r["evidence"], ks))
        for r in scored
        if r["coarse"] is not None
    ]
    final_ks = sorted(set(ks) | set(cutoffs(answer_k)))
    final_rows = [
        (r["category"], score_ranking(_ranking(r["final"]), r["evidence"], final_ks))
        for r in scored
    ]
    coarse_complete = coarse_observable and len(coarse_rows) == len(scored)
    return {
        "cutoffs": list(ks),
        "scored_questions": len(scored),
        "coarse": {
            "available": coarse_complete,
            "reason": None
            if coarse_complete
            else "the rerank trace (coarse pool) is not observable over the HTTP SDK",
            "by_category": aggregate(coarse_rows) if coarse_complete else None,
        },
        "final": {"by_category": aggregate(final_rows)},
    }


def _latency(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    reranks = [r["rerank"] for r in records if r.get("rerank")]
    tokens_in = [t["input_tokens"] for t in reranks if t["input_tokens"] is not None]
    tokens_out = [t["output_tokens"] for t in reranks if t["output_tokens"] is not None]
    return {
        "search_ms": summary([r["latency_ms"] for r in records]),
        "rerank_ms": summary([t["latency_ms"] for t in reranks]) if reranks else None,
        "rerank_tokens_per_query": {
            "input": sum(tokens_in) / len(tokens_in) if tokens_in else None,
            "output": sum(tokens_out) / len(tokens_out) if tokens_out else None,
            "requests": sum(t["requests"] for t in reranks) / len(reranks) if reranks else None,
            "fallbacks": sum(1 for t in reranks if t["used_fallback"]),
        },
    }


def _answers(records: Sequence[dict[str, Any]], judge_policy: str) -> dict[str, Any] | None:
    answered = [r for r in records if "prediction" in r]
    if not answered:
        return None
    unscorable = sum(1 for r in answered if "answer_scores" not in r)
    scores = aggregate(
        (r["category"], r["answer_scores"]) for r in answered if "answer_scores" in r
    )
    judged = [r for r in answered if r.get("judge")]
    verdicts = [r for r in judged if r["judge"]["correct"] is not None]
    judge = None
    if judged:
        judge = {
            "policy": judge_policy,
            "by_category": aggregate(
                (r["category"], {"accuracy": 1.0 if r["judge"]["correct"] else 0.0})
                for r in verdicts
            ),
            "invalid_verdicts": len(judged) - len(verdicts),
        }
    return {"deterministic": scores, "judge": judge, "unscorable": unscorable}


def build_results(
    *,
    config: dict[str, Any],
    dataset: Dataset,
    conversations: Sequence[dict[str, Any]],
    environment: dict[str, Any],
    coarse_observable: bool,
) -> dict[str, Any]:
    records = [record for payload in conversations for record in payload["records"]]
    ks = cutoffs(int(config["top_k"]))
    by_category = Counter(CATEGORY_NAMES.get(r["category"], "?") for r in records)
    return {
        "benchmark": "LoCoMo",
        "attribution": ATTRIBUTION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "powercontext_version": __version__,
        "config": config,
        "environment": environment,
        "dataset": {
            "source": dataset.source,
            "sha256": dataset.sha256,
            "conversations": [payload["sample_id"] for payload in conversations],
            "questions": len(records),
            "questions_by_category": dict(sorted(by_category.items())),
            "questions_without_evidence": sum(1 for r in records if not r["evidence"]),
            # Part of the above: evidence naming a turn that was not written (unscorable).
            "questions_with_unresolved_evidence": sum(
                1 for r in records if r.get("unresolved_evidence")
            ),
            # The run's conversations only: a selection must not report another's exclusions.
            "issues": dataset.issues_for(p["sample_id"] for p in conversations).as_dict(),
        },
        "ingest": {payload["sample_id"]: payload["ingest"] for payload in conversations},
        "modes": dict(Counter(str(r["mode"]) for r in records)),
        "retrieval": _retrieval(records, ks, int(config["answer_k"]), coarse_observable),
        "final_hits": aggregate((r["category"], {"hits": float(len(r["final"]))}) for r in records),
        "latency": _latency(records),
        "answers": _answers(records, str(config.get("judge", "none"))),
    }


def write_outputs(results: dict[str, Any], out: Path) -> ReportPaths:
    from powercontext.bench.locomo.chart import charts_available, write_recall_chart
    from powercontext.bench.locomo.markdown import render_report

    chart = out / CHART_FILE if charts_available() else None
    paths = ReportPaths(out / RESULTS_FILE, out / REPORT_FILE, chart)
    paths.results.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    if chart is not None:
        write_recall_chart(results, chart)
    chart_name = chart.name if chart is not None else None
    paths.report.write_text(render_report(results, chart_name=chart_name), encoding="utf-8")
    return paths
