"""Choose the by-class candidate limits on some conversations, report them on the others.

    python -m powercontext.bench.locomo.class_fit --data locomo-dev.json \\
        --fit-on conv-26,conv-30 --out runs/class_fit [--tokens-model llamacpp:smollm2]

One run searches every question of --conversations (default: all) once per limit in 10, 20,
30, 40 and 50 (`tradeoff.measure_questions`) and keeps those per-question rows
(`rows.json`; `--rows` reuses them). The class limits are then chosen on the --fit-on
conversations only: every table of limits from that grid is tried, and the one whose overall
recall sits furthest above the fixed-limit curve (at its own mean prompt size, smaller prompt
on a tie) wins. A class asked fewer than --min-questions times on the fit conversations is
not fitted: it takes the one_fact limit, since there is no evidence to treat it apart. The
query classes come from the policy's rules (`classify_query`), which are fixed in advance and
never see the data.

Reported (`class_fit.json`, `class_fit.md`): the fitted table, and the curve margin of both
the fitted table and the configured default table on the fit conversations, on the held-out
ones and on all of them; plus `tradeoff.json/md/png` for the default table over all
conversations (the docs' trade-off table, from this same run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path
from typing import Any

from powercontext.bench.locomo.metrics import OVERALL
from powercontext.bench.locomo.tradeoff import (
    MEASURED_LIMITS,
    QuestionRow,
    curve_recall,
    measure_questions,
    policy_table,
    split_ids,
    summarize,
    token_counter,
    token_server,
)
from powercontext.bench.locomo.tradeoff_report import BY_CLASS, write_tradeoff
from powercontext.memory.search.candidates import DEFAULT_CLASS_LIMITS, QUERY_CLASSES


def fit_class_limits(
    rows: Sequence[QuestionRow],
    grid: Sequence[int] = MEASURED_LIMITS,
    min_questions: int = 10,
) -> dict[str, int]:
    """The class table from `grid` with the largest curve margin on `rows`."""
    asked = Counter(row["query_class"] for row in rows)
    fitted: list[str] = [c for c in QUERY_CLASSES if asked[c] >= min_questions]
    if "one_fact" not in fitted:
        fitted.insert(0, "one_fact")
    fixed_table = policy_table(rows, DEFAULT_CLASS_LIMITS, grid)
    fixed_points = [fixed_table[f"fixed-{c}"][OVERALL] for c in grid]
    curve = sorted((p["prompt_chars"], p["pool_recall"]) for p in fixed_points)
    best: tuple[float, float, dict[str, int]] | None = None
    for choice in product(grid, repeat=len(fitted)):
        limits: dict[str, int] = dict(zip(fitted, choice, strict=True))
        table: dict[str, int] = {c: limits.get(c, limits["one_fact"]) for c in QUERY_CLASSES}
        size, recall = _overall(rows, table)
        margin = recall - curve_recall(curve, size)
        if best is None or (margin, -size) > (best[0], -best[1]):
            best = (margin, size, table)
    assert best is not None
    return best[2]


def _overall(rows: Sequence[QuestionRow], limits: Mapping[str, int]) -> tuple[float, float]:
    """Mean prompt chars and pool recall over the scored categories (1-4) under `limits`."""
    scored = [r["limits"][str(limits[r["query_class"]])] for r in rows if r["category"] != 5]
    if not scored:
        return 0.0, 0.0
    n = len(scored)
    return sum(m["prompt_chars"] for m in scored) / n, sum(m["pool_recall"] for m in scored) / n


def split_report(
    rows: Sequence[QuestionRow], fit_on: Sequence[str], tables: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, dict[str, float]]]:
    """For each named class table: overall recall, prompt chars and curve margin on the fit
    conversations, the held-out ones and all of them."""
    splits = {
        "fit": [r for r in rows if r["conversation"] in fit_on],
        "held_out": [r for r in rows if r["conversation"] not in fit_on],
        "all": list(rows),
    }
    report: dict[str, dict[str, dict[str, float]]] = {}
    for name, limits in tables.items():
        report[name] = {}
        for split, chosen in splits.items():
            if not chosen:
                continue
            summary = summarize(chosen, {}, limits)
            overall = summary["policies"][BY_CLASS][OVERALL]
            report[name][split] = {
                "questions": overall["n"],
                "pool_recall": round(overall["pool_recall"], 4),
                "prompt_chars": round(overall["prompt_chars"], 1),
                "curve_margin": summary["by_class_curve_margin"],
                "curve_margin_without_40": summary["by_class_curve_margin_without_40"],
            }
    return report


def markdown(fitted: Mapping[str, int], report: Mapping[str, Any], fit_on: Sequence[str]) -> str:
    lines = [
        f"Fitted on {', '.join(fit_on)}: {dict(fitted)}.",
        "",
        "| class table | split | questions | pool recall | prompt chars | margin over curve"
        " (10-50) | margin without fixed-40 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, splits in report.items():
        for split, figures in splits.items():
            lines.append(
                f"| {name} | {split} | {figures['questions']:.0f} | {figures['pool_recall']:.4f}"
                f" | {figures['prompt_chars']:.0f} | {figures['curve_margin']:+.4f}"
                f" | {figures['curve_margin_without_40']:+.4f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("locomo-class-fit"))
    parser.add_argument("--fit-on", required=True, help="sample ids to fit on, comma separated")
    parser.add_argument("--conversations", default=None, help="sample ids measured (all)")
    parser.add_argument("--mode", choices=["auto", "fts", "vector", "hybrid"], default="auto")
    parser.add_argument("--min-questions", type=int, default=10)
    parser.add_argument("--rows", type=Path, default=None, help="reuse a run's rows.json")
    parser.add_argument("--tokens-model", default=None, help="e.g. llamacpp:smollm2")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    fit_on = split_ids(args.fit_on) or []
    if args.rows is not None:
        saved = json.loads(args.rows.read_text(encoding="utf-8"))
        rows, facts = saved["rows"], saved["facts"]
    else:
        with token_server(args.tokens_model) as address:
            rows, facts = asyncio.run(_measure(args, address))
        saved = {"facts": facts, "rows": rows}
        (args.out / "rows.json").write_text(json.dumps(saved) + "\n", encoding="utf-8")
    fitted = fit_class_limits(
        [r for r in rows if r["conversation"] in fit_on], min_questions=args.min_questions
    )
    report = split_report(rows, fit_on, {"fitted": fitted, "defaults": DEFAULT_CLASS_LIMITS})
    results = {"fit_on": fit_on, "fitted_limits": fitted, "splits": report, **facts}
    text = markdown(fitted, report, fit_on)
    (args.out / "class_fit.json").write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    (args.out / "class_fit.md").write_text(text, encoding="utf-8")
    tradeoff = summarize(rows, facts, DEFAULT_CLASS_LIMITS)
    write_tradeoff(tradeoff, args.out)
    print(text)


async def _measure(
    args: argparse.Namespace, token_address: str | None
) -> tuple[list[QuestionRow], dict[str, Any]]:
    async with token_counter(token_address, args.tokens_model) as tokens:
        return await measure_questions(
            args.data,
            args.out,
            mode=args.mode,
            tokens=tokens,
            conversations=split_ids(args.conversations),
        )


if __name__ == "__main__":
    main()
