"""The LoCoMo candidate trade-off's outputs: tradeoff.json, the markdown table and the chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from powercontext.bench.locomo.dataset import CATEGORY_NAMES
from powercontext.bench.locomo.metrics import OVERALL

BY_CLASS = "by_class"


def write_tradeoff(results: dict[str, Any], out: Path) -> None:
    (out / "tradeoff.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "tradeoff.md").write_text(markdown(results), encoding="utf-8")
    _chart(results, out / "tradeoff.png")


def markdown(results: dict[str, Any]) -> str:
    table = results["policies"]
    groups = [OVERALL, *(CATEGORY_NAMES[c] for c in sorted(CATEGORY_NAMES))]
    groups = [g for g in groups if g in table["fixed-10"]]
    with_tokens = "prompt_tokens" in table["fixed-10"][OVERALL]
    tokens_head = "mean prompt tokens | " if with_tokens else ""
    head = f"| policy | mean candidates | mean prompt chars | {tokens_head}" + " | ".join(
        f"recall {g} (n={int(table['fixed-10'][g]['n'])})" for g in groups
    )
    lines = [head + " |", "|---" * (3 + with_tokens + len(groups)) + "|"]
    for policy, by_group in table.items():
        cells = [f"{by_group[g]['pool_recall']:.3f}" for g in groups]
        overall = by_group[OVERALL]
        token_cell = f"{overall['prompt_tokens']:.0f} | " if with_tokens else ""
        lines.append(
            f"| {policy} | {overall['candidates']:.1f} | {overall['prompt_chars']:.0f} | "
            + token_cell
            + " | ".join(cells)
            + " |"
        )
    classes = ", ".join(
        f"{name}: " + ", ".join(f"{c} {n}" for c, n in sorted(counts.items()))
        for name, counts in results["query_classes"].items()
    )
    verdict = "on or above" if results["by_class_on_or_above_fixed_curve"] else "below"
    return (
        "\n".join(lines)
        + f"\n\nClass limits: {results['class_limits']}. Query classes per category: {classes}."
        + f"\n\nThe by-class policy is {verdict} the fixed-limit curve (overall recall at the"
        " same mean prompt size, linearly interpolated through every fixed point): margin"
        f" {results['by_class_curve_margin']:+.4f}; through 10, 20, 30 and 50 only:"
        f" {results['by_class_curve_margin_without_40']:+.4f}.\n"
    )


def _chart(results: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = results["policies"]
    figure, axis = plt.subplots(figsize=(6, 4))
    fixed = [p for p in table if p.startswith("fixed-")]
    xs = [table[p][OVERALL]["prompt_chars"] for p in fixed]
    ys = [table[p][OVERALL]["pool_recall"] for p in fixed]
    axis.plot(xs, ys, marker="o", label="fixed candidate limit")
    for policy, x, y in zip(fixed, xs, ys, strict=True):
        axis.annotate(
            policy.removeprefix("fixed-"), (x, y), textcoords="offset points", xytext=(4, -10)
        )
    by_class = table[BY_CLASS][OVERALL]
    axis.plot([by_class["prompt_chars"]], [by_class["pool_recall"]], "r*", ms=12, label="by class")
    axis.set_xlabel("mean listwise prompt size per rerank (characters)")
    axis.set_ylabel("pool evidence recall (overall, categories 1-4)")
    axis.grid(alpha=0.3)
    axis.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
