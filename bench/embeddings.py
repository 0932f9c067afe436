"""Embedding latency and throughput on this machine.

    python bench/embeddings.py                       # the local MiniLM, 2,000 documents
    python bench/embeddings.py --model hash          # the feature-hashing embedder
    python bench/embeddings.py --documents 500 --queries 50

Measures, for any model `build_embedding_model` accepts:
- load: the first call (sha256 verification and session start for the local model);
- query latency: one short query per call (LoCoMo questions), p50/p95 after a warm-up;
- document throughput: texts/s for LoCoMo-sized turns (10-30 words) embedded in chunks of
  `--chunk` texts per call, the way ingest batches them.

Documents are LoCoMo turns from ../shared/data/locomo/locomo-dev.json (cut to 30 words,
shorter than 10 words skipped), topped up with seeded sentences over the same vocabulary when
the file holds too few or is absent. Figures go to stdout and to bench/results/embeddings.json,
keyed by model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any

from powercontext.inference.embeddings import build_embedding_model
from powercontext.memory.ports import EmbeddingModel

ROOT = Path(__file__).resolve().parent.parent
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
RESULTS = ROOT / "bench" / "results" / "embeddings.json"
FALLBACK_WORDS = (
    "caroline melanie went to the support group yesterday and talked about painting music "
    "school career kids camping beach pottery friends family adoption counseling book race"
).split()


def _locomo_texts() -> tuple[list[str], list[str]]:
    if not LOCOMO.is_file():
        return [], []
    samples = json.loads(LOCOMO.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for sample in samples:
        questions.extend(str(qa["question"]) for qa in sample.get("qa", []) if "question" in qa)
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns.extend(str(turn["text"]) for turn in session if "text" in turn)
    return turns, questions


def build_corpus(count: int, seed: int = 7) -> tuple[list[str], int, list[str]]:
    """`count` documents of 10-30 words (how many are real turns) and the query pool."""
    turns, questions = _locomo_texts()
    documents: list[str] = []
    for turn in turns:
        words = turn.split()
        if len(words) >= 10:
            documents.append(" ".join(words[:30]))
    documents = documents[:count]
    real = len(documents)
    vocabulary = sorted({w for d in documents for w in d.split()}) or FALLBACK_WORDS
    rng = random.Random(seed)
    while len(documents) < count:
        documents.append(" ".join(rng.choice(vocabulary) for _ in range(rng.randint(10, 30))))
    short_questions = [q for q in questions if len(q.split()) <= 12]
    if not short_questions:
        short_questions = ["What did Caroline do at the support group?"]
    return documents, real, short_questions


def _cpu_pressure() -> float | None:
    """Linux PSI: % of the last 10 s some task waited for a CPU (other tenants included)."""
    try:
        first = Path("/proc/pressure/cpu").read_text(encoding="utf-8").split("\n")[0]
    except OSError:
        return None
    fields = dict(item.split("=") for item in first.split()[1:])
    return float(fields["avg10"])


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def measure(
    model: EmbeddingModel, documents: list[str], queries: list[str], repeats: int, chunk: int
) -> dict[str, Any]:
    started = time.perf_counter()
    await model.embed_query("warm up")
    first_call_s = time.perf_counter() - started

    for query in queries[:10]:
        await model.embed_query(query)
    latencies_ms: list[float] = []
    for index in range(repeats):
        query = queries[index % len(queries)]
        started = time.perf_counter()
        await model.embed_query(query)
        latencies_ms.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    for offset in range(0, len(documents), chunk):
        await model.embed_documents(documents[offset : offset + chunk])
    documents_s = time.perf_counter() - started

    return {
        "first_call_s": round(first_call_s, 4),
        "query_latency_ms": {
            "p50": round(statistics.median(latencies_ms), 3),
            "p95": round(_percentile(latencies_ms, 0.95), 3),
            "mean": round(statistics.fmean(latencies_ms), 3),
            "samples": len(latencies_ms),
        },
        "documents": {
            "count": len(documents),
            "chunk": chunk,
            "seconds": round(documents_s, 3),
            "texts_per_s": round(len(documents) / documents_s, 1),
            "mean_words": round(statistics.fmean(len(d.split()) for d in documents), 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local:all-minilm-l6-v2")
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200, help="timed single queries")
    parser.add_argument("--chunk", type=int, default=64, help="texts per embed_documents call")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    model = build_embedding_model(args.model)
    if model is None:
        raise SystemExit(f"{args.model!r} builds no embedding model")
    documents, real, queries = build_corpus(args.documents)
    figures = asyncio.run(measure(model, documents, queries, args.queries, args.chunk))
    report = {
        "model": args.model,
        "profile_id": model.profile.profile_id,
        "dimension": model.profile.dimension,
        "corpus": {"locomo_turns": real, "generated": len(documents) - real},
        **figures,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "cpu_pressure_avg10_pct": _cpu_pressure(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
    }
    latency, docs = report["query_latency_ms"], report["documents"]
    print(f"model            {report['profile_id']}")
    print(f"first call       {report['first_call_s'] * 1000:.0f} ms (verify + load)")
    print(f"query latency    p50 {latency['p50']:.2f} ms, p95 {latency['p95']:.2f} ms")
    print(
        f"documents        {docs['texts_per_s']:.0f} texts/s ({docs['count']} texts, "
        f"{docs['mean_words']} words mean, {docs['chunk']} per call, {real} LoCoMo turns)"
    )
    machine = report["machine"]
    print(
        f"machine          {machine['cpus']} cpus, load {machine['load_average_1m']}, "
        f"cpu pressure {machine['cpu_pressure_avg10_pct']}% (avg10, other tenants included)"
    )
    # One file for every model measured: a run replaces only its own model's entry.
    previous: dict[str, Any] = {}
    if args.output.is_file():
        previous = json.loads(args.output.read_text(encoding="utf-8"))
    previous[report["model"]] = report
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(previous, indent=2) + "\n", encoding="utf-8")
    print(f"wrote            {args.output}")


if __name__ == "__main__":
    main()
