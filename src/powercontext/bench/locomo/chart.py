"""PNG chart: evidence recall@k of the coarse pool against the final hits, per category.

matplotlib is imported lazily with the Agg backend: the harness needs no display, and
importing the package costs nothing until a chart is drawn. It is optional (the `[charts]`
extra): without it the run still writes its JSON and Markdown report, and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from powercontext.extras import install_hint

CHART_HINT = f"no chart: matplotlib is not installed ({install_hint('charts')})"


def charts_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_recall_chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    retrieval = results["retrieval"]
    ks: list[int] = retrieval["cutoffs"]
    final = retrieval["final"]["by_category"]
    coarse = retrieval["coarse"]["by_category"]
    groups = list(final) or ["overall"]
    figure, axes = plt.subplots(
        1, len(groups), figsize=(2.6 * len(groups) + 1, 3.4), sharey=True, squeeze=False
    )
    for axis, group in zip(axes[0], groups, strict=True):
        positions = list(range(len(ks)))
        if coarse and group in coarse:
            axis.plot(
                positions,
                [coarse[group][f"recall@{k}"] for k in ks],
                marker="o",
                label="coarse pool",
            )
        if group in final:
            axis.plot(
                positions,
                [final[group][f"recall@{k}"] for k in ks],
                marker="s",
                label="final hits",
            )
            axis.set_title(f"{group} (n={int(final[group]['n'])})", fontsize=9)
        axis.set_xticks(positions, [f"@{k}" for k in ks])
        axis.set_ylim(0, 1.05)
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel("evidence recall")
    if axes[0][0].get_legend_handles_labels()[0]:  # no line to name when nothing was scored
        axes[0][0].legend(fontsize=8, loc="lower right")
    config = results["config"]
    note = "" if coarse else " (coarse pool not observable)"
    figure.suptitle(
        f"LoCoMo recall@k, mode={config['mode']}, rerank={config['rerank']}, "
        f"granularity={config['granularity']}{note}",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
