"""The Markdown report rendered from results.json (one function of its input, no I/O)."""

from __future__ import annotations

from typing import Any

from powercontext.bench.locomo.chart import CHART_HINT

LABEL_NOTE = (
    "Categories use the mapping of the LoCoMo authors' evaluation code: 1 multi-hop, "
    "2 temporal, 3 open-domain, 4 single-hop, 5 adversarial. Other harnesses label the same "
    "numbers differently (several swap multi-hop and single-hop, or call category 3 "
    "'commonsense'), so compare per-category figures by category number, not by name. "
    "'overall' averages categories 1-4; category 5 is reported on its own."
)


def _number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def retrieval_table(by_category: dict[str, dict[str, float]], ks: list[int]) -> str:
    pool = ks[-1]
    header = ["category", "n", *(f"R@{k}" for k in ks), *(f"hit@{k}" for k in ks), f"MRR@{pool}"]
    rows = [
        [
            group,
            str(int(scores["n"])),
            *(_number(scores[f"recall@{k}"]) for k in ks),
            *(_number(scores[f"hit@{k}"]) for k in ks),
            _number(scores[f"mrr@{pool}"]),
        ]
        for group, scores in by_category.items()
    ]
    return _table(header, rows)


def _answers_section(answers: dict[str, Any]) -> list[str]:
    deterministic = answers["deterministic"]
    judge = answers["judge"]
    header = ["category", "n", "exact match", "token F1", "BLEU-1"]
    if judge:
        header.append(f"LLM judge accuracy ({judge['policy']} policy)")
    rows = []
    for group, scores in deterministic.items():
        row = [
            group,
            str(int(scores["n"])),
            _number(scores["exact_match"]),
            _number(scores["f1"]),
            _number(scores["bleu1"]),
        ]
        if judge:
            judged = judge["by_category"].get(group)
            row.append(_number(judged["accuracy"]) if judged else "n/a")
        rows.append(row)
    lines = ["## Answers", "", _table(header, rows), ""]
    if answers.get("unscorable"):
        lines.append(
            f"Unscored: {answers['unscorable']} answered questions of categories 1-4 have no "
            "gold answer in the file."
        )
    lines.append(
        "Category 5 is scored as in the authors' code: 1 when the answer abstains "
        "('not mentioned' / 'no information available'), else 0, on every metric."
    )
    if judge:
        lines.append(
            f"The judge accuracy is the `{judge['policy']}` policy only; it is not "
            "interchangeable with the other judge policy, exact match, token F1 or BLEU-1. "
            f"Invalid verdicts (excluded): {judge['invalid_verdicts']}."
        )
    return [*lines, ""]


def render_report(results: dict[str, Any], *, chart_name: str | None) -> str:
    config = results["config"]
    dataset = results["dataset"]
    retrieval = results["retrieval"]
    ks: list[int] = retrieval["cutoffs"]
    latency = results["latency"]
    lines = [
        "# LoCoMo evaluation",
        "",
        results["attribution"],
        "",
        f"- data: `{dataset['source']}` (sha256 `{dataset['sha256'][:12]}`), "
        f"conversations: {', '.join(dataset['conversations'])}",
        f"- questions: {dataset['questions']} "
        f"({', '.join(f'{k}: {v}' for k, v in dataset['questions_by_category'].items())}); "
        f"scored for retrieval: {retrieval['scored_questions']} "
        f"(without valid evidence: {dataset['questions_without_evidence']}, of which "
        f"{dataset.get('questions_with_unresolved_evidence', 0)} cite a turn the conversation "
        "does not hold and are unscorable)",
        f"- mode `{config['mode']}` (resolved: {results['modes']}), rerank `{config['rerank']}`, "
        f"granularity `{config['granularity']}`, pool (top-k) {config['top_k']}, "
        f"final (answer-k) {config['answer_k']}",
        f"- backend: {results['environment'].get('backend')}, embedding profile: "
        f"{results['environment'].get('embedding_profile', 'n/a')}, "
        f"PowerContext {results['powercontext_version']}",
        "",
        LABEL_NOTE,
        "",
        "## Evidence retrieval: coarse pool",
        "",
    ]
    coarse = retrieval["coarse"]
    if coarse["available"]:
        lines.append(retrieval_table(coarse["by_category"], ks))
    else:
        lines.append(f"Unavailable: {coarse['reason']}.")
    lines += ["", "## Evidence retrieval: final hits", ""]
    # The final list holds at most answer-k hits: deeper cutoffs would repeat the last column.
    final_ks = [k for k in ks if k < config["answer_k"]] + [config["answer_k"]]
    lines.append(retrieval_table(retrieval["final"]["by_category"], sorted(set(final_ks))))
    if config["rerank"] == "none":
        lines += [
            "",
            "Without rerank the search asks for the pool size and the final hits are the "
            "pool's first answer-k, which is the pool the reranker would see.",
        ]
    mean_hits = results["final_hits"].get("overall", {}).get("hits")
    search = latency["search_ms"]
    lines += [
        "",
        f"Mean final hits (categories 1-4): {_number(mean_hits, 2)}. Search latency: "
        f"p50 {_number(search['p50'], 1)} ms, p95 {_number(search['p95'], 1)} ms "
        f"over {search['n']} searches.",
    ]
    rerank = latency["rerank_ms"]
    if rerank:
        tokens = latency["rerank_tokens_per_query"]
        lines.append(
            f"Rerank latency: p50 {_number(rerank['p50'], 1)} ms, p95 "
            f"{_number(rerank['p95'], 1)} ms; tokens per query: input "
            f"{_number(tokens['input'], 0)}, output {_number(tokens['output'], 0)}; "
            f"fallbacks: {tokens['fallbacks']}."
        )
    if chart_name is not None:
        lines += ["", f"![recall@k, coarse pool against final hits]({chart_name})", ""]
    else:
        lines += ["", f"({CHART_HINT})", ""]
    if results["answers"]:
        lines += _answers_section(results["answers"])
    issues = dataset["issues"]
    lines += ["## Dataset quirks handled", ""]
    if issues["counts"]:
        for kind, count in issues["counts"].items():
            shown = "; ".join(issues["examples"].get(kind, [])[:3])
            lines.append(f"- `{kind}`: {count} (e.g. {shown})")
    else:
        lines.append("- none")
    return "\n".join(lines) + "\n"
