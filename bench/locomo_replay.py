"""Query-time variants on a database the LoCoMo ablation already wrote.

    python bench/locomo_ablation.py --variant defaults --out runs/abl      # writes once
    python bench/locomo_replay.py runs/abl/defaults --set search_feedback_docs=0
    python bench/locomo_replay.py runs/abl/defaults --variant "defaults" \
        --variant "-feedback: search_feedback_docs=0" --results NAME   # several, one process

Settings that decide what is indexed (context window, date, speaker key, template) are baked
into the database, so only search settings (fusion, field weights, feedback, stop words, ...)
can be varied here; an index setting passed with --set is refused. Each run re-asks every
question of the ablation's records and prints R@5/10/30 and MRR@30 overall, on the tuning
pair and on the held-out pair, and the search latency: the same figures as
locomo_ablation.py, in seconds instead of minutes. With `--variant "NAME: S=V S2=V2"`
(repeatable) every variant is replayed in turn in one process, and the per-category figures are
printed as a Markdown table (and written to bench/results/NAME.json with `--results NAME`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from powercontext import ServerSettings, open_runtime
from powercontext.bench.locomo.backends import bench_settings
from powercontext.bench.locomo.dataset import load_dataset
from powercontext.bench.locomo.ingest import covered_dia_ids, plan_ingest
from powercontext.bench.locomo.metrics import aggregate, score_ranking, summary
from powercontext.bench.locomo.runner import DATABASE_FILE
from powercontext.config import RuntimeConfig
from powercontext.memory.models import SearchMemoryRequest
from powercontext.memory.search import bm25

BENCH = Path(__file__).resolve().parent
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
INDEX_SETTINGS = ("index_", "analyzer_language", "analyzer_strip_clitics")


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _scores(rows: list[tuple[int, dict[str, float]]]) -> dict[str, float]:
    return aggregate(rows)["overall"]


async def replay(args: argparse.Namespace, items: list[str]) -> dict[str, Any]:
    overrides = dict(item.split("=", 1) for item in items)
    refused = [k for k in overrides if k.startswith(INDEX_SETTINGS)]
    if refused:
        raise SystemExit(f"index settings cannot vary on a written database: {refused}")
    base = ServerSettings()
    runtime = RuntimeConfig(
        **{**base.runtime.model_dump(), **{k: _value(v) for k, v in overrides.items()}}
    )
    settings = bench_settings(
        ServerSettings(runtime=runtime, inference=base.inference, http=base.http),
        rerank=False,
        top_k=30,
        database_path=args.run / DATABASE_FILE,
    )
    dataset = load_dataset(args.data)
    rows: dict[str, list[tuple[int, dict[str, float]]]] = {"all": [], "tune": [], "held": []}
    latencies: list[float] = []
    async with open_runtime(settings) as opened:
        for conversation in dataset.conversations:
            path = args.run / "conversations" / f"{conversation.sample_id}.json"
            if not path.exists():  # not written (yet): the ablation is still running
                continue
            scope = opened.memory.for_scope(plan_ingest(conversation, "turn").scope_id)
            saved = json.loads(path.read_text())
            for record in saved["records"]:
                if not record["evidence"] or record["coarse"] is None:
                    continue
                started = time.perf_counter()
                page = await scope.search(
                    SearchMemoryRequest(query=record["question"], limit=30, mode="hybrid")
                )
                latencies.append((time.perf_counter() - started) * 1000)
                ranking = [frozenset(covered_dia_ids(dict(h.metadata))) for h in page.hits]
                row = (record["category"], score_ranking(ranking, record["evidence"], (5, 10, 30)))
                rows["all"].append(row)
                rows["tune" if conversation.sample_id in args.tune else "held"].append(row)
    latency = summary(latencies)
    return {
        "settings": overrides,
        **{name: _scores(found) if found else {} for name, found in rows.items()},
        "categories": aggregate(rows["all"]),
        "latency_ms": {"p50": latency["p50"], "p95": latency["p95"]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="an ablation variant's output directory")
    parser.add_argument("--set", action="append", default=[], help="SETTING=VALUE (runtime)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--tune", action="append", help="tuning sample ids (repeatable)")
    parser.add_argument(
        "--variant", action="append", default=[], help='"NAME: SETTING=VALUE ..." (repeatable)'
    )
    parser.add_argument("--results", help="write the variants to bench/results/NAME.json")
    parser.add_argument(
        "--bm25",
        metavar="K1,B",
        help="BM25's k1 and b for this process (constants of memory/search/bm25.py, not "
        "settings; SQLite reads them per search): to tune them on a written database",
    )
    args = parser.parse_args()
    if args.bm25:
        k1, b = (float(v) for v in args.bm25.split(","))
        bm25.K1, bm25.B, bm25.MAX_SATURATION = k1, b, k1 + 1.0
    args.tune = args.tune or ["conv-26", "conv-30"]
    if args.variant:
        asyncio.run(_variants(args))
        return
    result = asyncio.run(replay(args, args.set))
    a, t, h = result["all"], result["tune"], result["held"]
    print(
        f"{' '.join(args.set) or 'as configured'}: R@5 {a['recall@5']:.3f} R@10 "
        f"{a['recall@10']:.3f} R@30 {a['recall@30']:.3f} MRR {a['mrr@30']:.3f} | tune "
        f"{t['recall@10']:.3f}/{t['recall@30']:.3f} | held {h.get('recall@10', 0):.3f}/"
        f"{h.get('recall@30', 0):.3f} | ms p50 {result['latency_ms']['p50']:.1f} "
        f"p95 {result['latency_ms']['p95']:.1f}"
    )


async def _variants(args: argparse.Namespace) -> None:
    results = []
    for spec in args.variant:
        name, _, items = spec.partition(":")
        result = await replay(args, items.split())
        results.append({"name": name.strip(), **result})
        print(_row(results[-1]), flush=True)
    print("\n".join(_row(r) for r in results))
    if args.results:
        sys.path.insert(0, str(BENCH))
        import corpus

        corpus.write_results(
            args.results, {"run": str(args.run), "data": str(args.data), "variants": results}
        )


def _row(result: dict[str, Any]) -> str:
    a, t, h, c = result["all"], result["tune"], result["held"], result["categories"]
    cats = " | ".join(
        f"{c[n]['recall@10']:.3f} / {c[n]['recall@30']:.3f} / {c[n]['mrr@30']:.3f}"
        for n in ("multi-hop", "temporal", "open-domain", "single-hop")
        if n in c
    )
    return (
        f"| {result['name']} | {a['recall@5']:.3f} | {a['recall@10']:.3f} | "
        f"{a['recall@30']:.3f} | {a['mrr@30']:.3f} | {cats} | {t['recall@10']:.3f} / "
        f"{t['recall@30']:.3f} | {h.get('recall@10', 0):.3f} / {h.get('recall@30', 0):.3f} | "
        f"{result['latency_ms']['p50']:.1f} / {result['latency_ms']['p95']:.1f} |"
    )


if __name__ == "__main__":
    main()
