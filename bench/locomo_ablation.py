"""Ablation of the search-quality features on LoCoMo, through the LoCoMo harness.

    python bench/locomo_ablation.py                           # every variant, dev file
    python bench/locomo_ablation.py --variant baseline --variant all
    python bench/locomo_ablation.py --list                    # what each variant sets

Each variant is a set of POWERCONTEXT_SERVER_RUNTIME_* values applied on top of the
environment. It is run by `run_locomo` (the harness loop, unchanged: hybrid mode, rerank none,
pool 30, final 10, turn granularity) in its own output directory, so every variant also has
the harness's own results.json and report.md.

Speed: the document embeddings of every variant are cached on disk by (profile, text), so a
variant that embeds the same texts as an earlier one does not embed them again. The cache
returns the vectors the model produced for exactly that text; query embeddings are never
cached, so the search latency reported is the real one (query embedding included).

Output: a Markdown table per variant (overall R@5/R@10/R@30/MRR@30, per category R@10 /
R@30 / MRR@30, search latency p50/p95) on stdout and in OUT/ablation.md, the same numbers in
OUT/ablation.json, and a split check: the figures on the tuning conversations and on the
held-out ones (default conv-26 + conv-30 against conv-41 + conv-42).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import resource
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from powercontext import ServerSettings, open_runtime
from powercontext.bench.locomo.backends import InProcessBackend, bench_settings
from powercontext.bench.locomo.metrics import aggregate, score_ranking, summary
from powercontext.bench.locomo.runner import DATABASE_FILE, RunConfig, run_locomo
from powercontext.config import RuntimeConfig
from powercontext.inference.embeddings import build_embedding_model
from powercontext.memory.ports import EmbeddingModel

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop")

OLD_DEFAULTS = {
    "analyzer_drop_query_stopwords": False,
    "search_rrf_k": 60,
    "index_context_before": 0,
    "index_context_after": 0,
    "index_event_date": False,
    "index_speaker_key": None,
    "search_rrf_weight_vector": 1.0,
    "search_participant_boost": 0.0,
}
"""The defaults before issue 17: every quality feature off."""
NO_CONTEXT = {"index_context_before": 0, "index_context_after": 0}
CONCATENATED = {"search_field_weight_context": 1.0}
"""A neighbour's word weighs as much as the entry's own: the pre-BM25F concatenation."""
NO_SPEAKER = {"index_speaker_key": None}
BATCH = {"_write": "batch"}
"""Not a setting: the harness writes each conversation with one remember_many."""

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "old defaults": OLD_DEFAULTS,
    "defaults, batch writes": BATCH,
    "old defaults, batch writes": {**OLD_DEFAULTS, **BATCH},
    "defaults -context": NO_CONTEXT,
    "defaults -date": {"index_event_date": False},
    "defaults -stopwords": {"analyzer_drop_query_stopwords": False},
    "defaults, rrf k=60": {"search_rrf_k": 60},
    "defaults -speaker": NO_SPEAKER,
    "defaults, neighbours weigh as own": CONCATENATED,
    "defaults, neighbours as own, -speaker": {**CONCATENATED, **NO_SPEAKER},
    "defaults -participant boost": {"search_participant_boost": 0.0},
    "defaults, vector weight 1.0": {"search_rrf_weight_vector": 1.0},
    "defaults, no BM25F, no speaker rules": {
        **CONCATENATED,
        **NO_SPEAKER,
        "search_participant_boost": 0.0,
    },
    "old + stopwords": {**OLD_DEFAULTS, "analyzer_drop_query_stopwords": True},
    "old + date": {**OLD_DEFAULTS, "index_event_date": True},
    "old + context": {**OLD_DEFAULTS, "index_context_before": 2, "index_context_after": 2},
    "old + speaker": {**OLD_DEFAULTS, "index_speaker_key": "speaker"},
    "old + rrf k=20": {**OLD_DEFAULTS, "search_rrf_k": 20},
    "defaults, participant boost 0.5": {"search_participant_boost": 0.5},
    "defaults, participant boost 1.0": {"search_participant_boost": 1.0},
    "defaults, participant boost 0.25": {"search_participant_boost": 0.25},
    "defaults, vector weight 0.7, participant boost 0.5": {
        "search_rrf_weight_vector": 0.7,
        "search_participant_boost": 0.5,
    },
    "defaults, rrf k=10": {"search_rrf_k": 10},
    "defaults, rrf k=5": {"search_rrf_k": 5},
    "defaults, neighbour weight 0.3": {"search_field_weight_context": 0.3},
    "defaults, speaker weight 1.0": {"search_field_weight_speaker": 1.0},
    "defaults, min similarity 0.2": {"search_min_similarity": 0.2},
    "defaults, context fts only": {"index_context_vector": False},
    "defaults, context vector only": {"index_context_fts": False},
    "defaults, context +-1": {"index_context_before": 1, "index_context_after": 1},
    "defaults, context +-3": {"index_context_before": 3, "index_context_after": 3},
    "defaults, context 2 before, 1 after": {"index_context_before": 2, "index_context_after": 1},
    "defaults, context 3 before, 1 after": {"index_context_before": 3, "index_context_after": 1},
    "defaults, context 1 before, 2 after": {"index_context_before": 1, "index_context_after": 2},
    "defaults, context 3 before, 2 after": {"index_context_before": 3, "index_context_after": 2},
    "defaults, vector weight 0.7": {"search_rrf_weight_vector": 0.7},
    "defaults + clitics": {"analyzer_strip_clitics": True},
    "defaults -feedback": {"search_feedback_docs": 0},
    "defaults, feedback 10 terms": {"search_feedback_terms": 10},
    "defaults, feedback 5 docs, 10 terms": {"search_feedback_docs": 5, "search_feedback_terms": 10},
    "defaults, feedback 10 docs, 10 terms": {
        "search_feedback_docs": 10,
        "search_feedback_terms": 10,
    },
    "defaults, feedback 5 docs": {"search_feedback_docs": 5},
    "defaults + vector feedback": {"search_vector_feedback_docs": 1},
    "defaults -feedback + vector feedback": {
        "search_feedback_docs": 0,
        "search_vector_feedback_docs": 1,
    },
}


class CachedDocumentEmbedder:
    """Any EmbeddingModel with its document vectors cached in SQLite (queries pass through)."""

    def __init__(self, inner: EmbeddingModel, path: Path) -> None:
        self.inner = inner
        self.profile = inner.profile
        self.texts = 0
        """Document texts asked for (cached or not): the ingest's embedding cost."""
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (digest TEXT PRIMARY KEY, v TEXT)")

    def _digest(self, text: str) -> str:
        return hashlib.sha256(f"{self.profile.profile_id}\0{text}".encode()).hexdigest()

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        digests = [self._digest(text) for text in texts]
        found: dict[str, list[float]] = {}
        for digest in set(digests):
            row = self._db.execute("SELECT v FROM vectors WHERE digest = ?", (digest,)).fetchone()
            if row:
                found[digest] = json.loads(row[0])
        todo = [i for i, digest in enumerate(digests) if digest not in found]
        if todo:
            vectors = await self.inner.embed_documents([texts[i] for i in todo])
            for i, vector in zip(todo, vectors, strict=True):
                found[digests[i]] = list(vector)
                self._db.execute(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                    (digests[i], json.dumps(list(vector))),
                )
            self._db.commit()
        return [found[digest] for digest in digests]

    async def embed_query(self, text: str) -> Sequence[float]:
        return await self.inner.embed_query(text)

    async def embed_queries(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return await self.inner.embed_queries(texts)


def _scores(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    rows = [
        (
            r["category"],
            score_ranking([frozenset(h) for h in r["coarse"]], r["evidence"], (5, 10, 30)),
        )
        for r in records
        if r["evidence"] and r["coarse"] is not None
    ]
    return aggregate(rows)


async def run_variant(
    name: str, overrides: dict[str, Any], args: argparse.Namespace, embedder: CachedDocumentEmbedder
) -> dict[str, Any]:
    slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
    out = args.out / slug
    base = ServerSettings()
    settings_overrides = {k: v for k, v in overrides.items() if not k.startswith("_")}
    write = overrides.get("_write", args.write)
    runtime = RuntimeConfig(**{**base.runtime.model_dump(), **settings_overrides})
    settings = bench_settings(
        ServerSettings(runtime=runtime, inference=base.inference, http=base.http),
        rerank=False,
        top_k=30,
        database_path=out / DATABASE_FILE,
    )
    config = RunConfig(data=args.data, out=out, mode=args.mode, rerank="none", write=write)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    texts_before = embedder.texts
    async with open_runtime(settings, embedding_model=embedder) as runtime_:
        outputs = await run_locomo(config, backend=InProcessBackend(runtime_), show_progress=False)
    elapsed = time.perf_counter() - started
    payloads = {
        sample: json.loads((out / "conversations" / f"{sample}.json").read_text())
        for sample in outputs.results["dataset"]["conversations"]
    }
    records = {sample: payload["records"] for sample, payload in payloads.items()}
    entries = sum(p["ingest"]["entries"] for p in payloads.values())
    ingest_seconds = sum(p["ingest"].get("seconds", 0.0) for p in payloads.values())
    every = [r for rs in records.values() for r in rs]
    tune = [r for s in args.tune for r in records.get(s, [])]
    held = [r for s, rs in records.items() if s not in args.tune for r in rs]
    latency = summary([r["latency_ms"] for r in every])
    return {
        "name": name,
        "settings": overrides,
        "all": _scores(every),
        "tune": _scores(tune),
        "held_out": _scores(held),
        "latency_ms": {"p50": latency["p50"], "p95": latency["p95"]},
        "run_seconds": elapsed,
        "database_mb": sum(f.stat().st_size for f in out.glob(DATABASE_FILE + "*")) / 1e6,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "ingest": {
            "entries": entries,
            "entries_per_s": entries / ingest_seconds if ingest_seconds else None,
            "embedded_texts_per_entry": (embedder.texts - texts_before) / max(entries, 1),
        },
    }


def _row(result: dict[str, Any]) -> str:
    o = result["all"]["overall"]
    cats = " | ".join(
        f"{result['all'][c]['recall@5']:.3f} / {result['all'][c]['recall@10']:.3f} / "
        f"{result['all'][c]['recall@30']:.3f} / {result['all'][c]['mrr@30']:.3f}"
        for c in CATEGORIES
    )
    lat = result["latency_ms"]
    ingest = result["ingest"]
    rate = ingest["entries_per_s"]
    return (
        f"| {result['name']} | {o['recall@5']:.3f} | {o['recall@10']:.3f} | "
        f"{o['recall@30']:.3f} | {o['mrr@30']:.3f} | {cats} | {lat['p50']:.1f} / "
        f"{lat['p95']:.1f} | {rate:.0f} | {ingest['embedded_texts_per_entry']:.2f} | "
        f"{result['database_mb']:.1f} |"
    )


def _split_row(result: dict[str, Any]) -> str:
    t, h = result["tune"]["overall"], result["held_out"]["overall"]
    return (
        f"| {result['name']} | {t['recall@10']:.3f} | {t['recall@30']:.3f} | "
        f"{h['recall@10']:.3f} | {h['recall@30']:.3f} |"
    )


def render(results: Sequence[dict[str, Any]], tune: Sequence[str]) -> str:
    head = " | ".join(f"{c} R@5 / R@10 / R@30 / MRR" for c in CATEGORIES)
    lines = [
        f"| variant | R@5 | R@10 | R@30 | MRR@30 | {head} | search ms p50 / p95 | "
        "ingest entries/s | embedded texts / entry | database MB |",
        "|---" * (9 + len(CATEGORIES)) + "|",
        *(_row(r) for r in results),
        "",
        f"| variant | tune ({', '.join(tune)}) R@10 | R@30 | held out R@10 | R@30 |",
        "|---|---|---|---|---|",
        *(_split_row(r) for r in results),
    ]
    return "\n".join(lines) + "\n"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=Path("locomo-ablation"))
    parser.add_argument("--variant", action="append", help="run only these (repeatable)")
    parser.add_argument("--mode", default="hybrid", choices=("hybrid", "fts", "vector"))
    parser.add_argument("--write", default="turns", choices=("turns", "batch"))
    parser.add_argument("--tune", action="append", help="tuning sample ids (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the variants and exit")
    parser.add_argument(
        "--results", help="also write the figures to bench/results/NAME.json (corpus.py)"
    )
    args = parser.parse_args()
    args.tune = args.tune or ["conv-26", "conv-30"]
    if args.list:
        for name, overrides in VARIANTS.items():
            print(f"{name}: {json.dumps(overrides)}")
        return
    names = args.variant or list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; see --list")
    args.out.mkdir(parents=True, exist_ok=True)
    inner = build_embedding_model(ServerSettings().inference.embedding_model)
    if inner is None:
        parser.error("the ablation needs an embedding model (the local MiniLM extra)")
    embedder = CachedDocumentEmbedder(inner, args.out / "embedding-cache.sqlite")
    results = []
    for name in names:
        result = await run_variant(name, VARIANTS[name], args, embedder)
        results.append(result)
        print(_row(result), flush=True)
    table = render(results, args.tune)
    (args.out / "ablation.md").write_text(table)
    (args.out / "ablation.json").write_text(json.dumps(results, indent=2))
    print(table)
    if args.results:
        sys.path.insert(0, str(BENCH))
        import corpus

        corpus.write_results(args.results, {"data": str(args.data), "variants": results})


def run_experiment(arguments: list[str]) -> None:
    """The ablation with these arguments (`--variant defaults` unless one is named), in the
    calling process: an experiment script patches a module first, then calls this."""
    if "--variant" not in arguments:
        arguments = ["--variant", "defaults", *arguments]
    sys.argv = ["locomo_ablation.py", *arguments]
    asyncio.run(main())


if __name__ == "__main__":
    asyncio.run(main())
