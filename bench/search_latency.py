"""Search latency per mode at growing sizes, through open_runtime: what a caller of
`memory.search` gets on the embedded SQLite store.

Each size runs in its own child process (so peak RSS is per size) on a fresh SQLite file:

1. ingest without embedding (text only, `remember_many` batches of 5,000; at most 100k
   entries), then ingest the searched scope with its vectors (precomputed hashing vectors, so
   this figure is the store's cost of taking vectors, not a model's);
2. one cold search per mode (fills the in-memory BM25 postings and builds the HNSW index);
3. `--queries` warm searches per mode (fts, vector, hybrid; limit 10, no reranker), query
   embedding excluded (looked up);
4. recall@30 of the store's vector channel against exact numpy search;
5. the same queries on the same file with the pre-issue-7 paths (FTS5 bm25() in SQL, exact
   vectors), for a before/after in the same run.

The local MiniLM embedder is timed on a small sample only and the ingest rate with it is
extrapolated (labelled as such).

    python bench/search_latency.py                    # 10k and 100k
    python bench/search_latency.py --sizes 1000000 --queries 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from powercontext.memory.ports import VectorQuery

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.ports import EmbeddingModel
from powercontext.storage.sqlite import IndexOptions, SqliteMemoryStore

SCOPE = "bench"
BATCH = 5_000
MODES = ("fts", "vector", "hybrid")
BEFORE = IndexOptions(ann=False, fulltext="fts5")


def settings(db: Path) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
    )


async def ingest(db: Path, items: list[str], embedder: EmbeddingModel | None) -> float:
    """Entries per second through remember_many, vectors (if any) included."""
    async with open_runtime(settings(db), embedding_model=embedder) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        started = time.perf_counter()
        for offset in range(0, len(items), BATCH):
            result = await memory.remember_many(
                [RememberMemoryRequest(text=t) for t in items[offset : offset + BATCH]]
            )
            assert result.vectors_pending == 0
        return len(items) / (time.perf_counter() - started)


async def timed_searches(
    db: Path, corpus: data.Corpus, index: IndexOptions, count: int
) -> dict[str, Any]:
    store = await SqliteMemoryStore.open(db, index=index)
    try:
        async with open_runtime(
            settings(db), embedding_model=corpus.embedder(), store=store
        ) as runtime:
            memory = runtime.memory.for_scope(SCOPE)
            figures: dict[str, Any] = {}
            for mode in MODES:
                started = time.perf_counter()
                await memory.search(SearchMemoryRequest(query=corpus.queries[0], mode=mode))
                cold_ms = (time.perf_counter() - started) * 1000
                samples = []
                hits = 0
                cpu_started = time.process_time()
                for query in corpus.queries[:count]:
                    request = SearchMemoryRequest(query=query, limit=10, mode=mode)
                    started = time.perf_counter()
                    page = await memory.search(request)
                    samples.append((time.perf_counter() - started) * 1000)
                    hits += len(page.hits)
                    assert page.mode == mode
                cpu_ms = (time.process_time() - cpu_started) * 1000 / count
                figures[mode] = {
                    **data.percentiles(samples),
                    "cpu_ms_per_query": round(cpu_ms, 3),
                    "cold_first_ms": round(cold_ms, 1),
                    "mean_hits": round(hits / count, 2),
                }
            figures["vector_recall_at_30"] = await recall(store, corpus, count)
            return figures
    finally:
        await store.close()


async def recall(store: SqliteMemoryStore, corpus: data.Corpus, count: int) -> float:
    """Mean share of the exact top 30 the store's vector channel returns (keys are 1..N).

    A returned key counts when its exact similarity reaches the 30th best one: rows with
    identical vectors tie, and either of them is a correct answer.
    """
    head = await store.head(SCOPE)
    assert head is not None
    profile = corpus.embedder().profile.profile_id
    correct = 0
    for vector in corpus.query_vectors[:count]:
        found = await store.vector_candidates(VectorQuery(SCOPE, head, profile, vector, limit=30))
        truth = data.exact_top(corpus.vectors, vector, 30)
        threshold = float(corpus.vectors[truth[-1]] @ vector) - 1e-5
        rows = np.asarray([c.key - 1 for c in found], dtype=np.int64)
        correct += int(np.count_nonzero(corpus.vectors[rows] @ vector >= threshold))
    return round(correct / (30 * count), 4)


async def local_embedder_rate(sample: list[str]) -> dict[str, Any]:
    try:
        from powercontext.inference.embeddings.local import LocalMiniLM

        model = LocalMiniLM()
        await model.embed_documents(sample[:8])  # loads the model; not timed
    except Exception as exc:  # the local extra may be missing
        return {"error": f"{type(exc).__name__}: {exc}"}
    started = time.perf_counter()
    for offset in range(0, len(sample), 64):
        await model.embed_documents(sample[offset : offset + 64])
    return {
        "sample": len(sample),
        "texts_per_second": len(sample) / (time.perf_counter() - started),
    }


def files_mb(directory: Path, pattern: str) -> int:
    return round(sum(p.stat().st_size for p in directory.glob(pattern)) / 2**20)


async def run_size(entries: int, queries: int, before_queries: int, local: int) -> dict[str, Any]:
    started = time.perf_counter()
    corpus = data.build(entries, max(queries, before_queries))
    result: dict[str, Any] = {"entries": entries, "corpus_seconds": time.perf_counter() - started}
    with tempfile.TemporaryDirectory(prefix="pc-latency-") as tmp:
        plain = corpus.texts[: min(entries, 100_000)]
        rate = await ingest(Path(tmp) / "plain.db", plain, None)
        result["ingest_without_embedding_per_s"] = round(rate)
        result["ingest_without_embedding_entries"] = len(plain)
        db = Path(tmp) / "search.db"
        started = time.perf_counter()
        result["ingest_with_precomputed_vectors_per_s"] = round(
            await ingest(db, corpus.texts, corpus.embedder())
        )
        result["ingest_seconds"] = round(time.perf_counter() - started, 1)
        result["after"] = await timed_searches(db, corpus, IndexOptions(), queries)
        if before_queries:
            result["before"] = await timed_searches(db, corpus, BEFORE, before_queries)
        result["db_mb"] = files_mb(Path(tmp), "search.db*")
    if local:
        embedded = await local_embedder_rate(corpus.texts[:local])
        if "texts_per_second" in embedded:
            per_entry = 1 / rate + 1 / embedded["texts_per_second"]
            embedded["extrapolated_ingest_with_local_embedding_per_s"] = round(1 / per_entry)
        result["local_embedder"] = embedded
    result["peak_rss_mb"] = data.peak_rss_mb()
    result["machine"] = data.machine()
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| entries | mode | p50 ms | p95 ms | p99 ms | CPU ms/query | cold first ms | "
        "before p50 | before p95 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for size in results:
        for mode in MODES:
            now = size["after"][mode]
            then = size.get("before", {}).get(mode, {})
            lines.append(
                f"| {size['entries']:,} | {mode} | {now['p50_ms']} | {now['p95_ms']} | "
                f"{now['p99_ms']} | {now['cpu_ms_per_query']} | {now['cold_first_ms']} | "
                f"{then.get('p50_ms', '-')} | "
                f"{then.get('p95_ms', '-')} |"
            )
    lines += [
        "",
        "| entries | recall@30 | ingest text-only /s | ingest + vectors /s | peak RSS MB |",
    ]
    lines.append("|---|---|---|---|---|")
    for size in results:
        lines.append(
            f"| {size['entries']:,} | {size['after']['vector_recall_at_30']} | "
            f"{size['ingest_without_embedding_per_s']:,} | "
            f"{size['ingest_with_precomputed_vectors_per_s']:,} | {size['peak_rss_mb']} |"
        )
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["entries"] for r in results]
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for mode, color in zip(MODES, ("tab:blue", "tab:green", "tab:purple"), strict=True):
        for stat, style in (("p50_ms", "-o"), ("p95_ms", "--x")):
            values = [r["after"][mode][stat] for r in results]
            axis.plot(sizes, values, style, color=color, label=f"{mode} {stat[:3]}")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("entries in the scope")
    axis.set_ylabel("search latency (ms)")
    axis.set_title("PowerContext embedded SQLite: search latency vs entries")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--before-queries", type=int, default=50, help="0 skips the before run")
    parser.add_argument("--local-sample", type=int, default=256, help="0 skips the local model")
    parser.add_argument("--output", default="search_latency")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = asyncio.run(
            run_size(args.one, args.queries, args.before_queries, args.local_sample)
        )
        print(json.dumps(result))
        return
    results = []
    for position, size in enumerate(sorted(args.sizes)):
        command = [sys.executable, __file__, "--one", str(size), "--queries", str(args.queries)]
        command += ["--before-queries", str(args.before_queries)]
        command += ["--local-sample", str(args.local_sample if position == 0 else 0)]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{size:,} entries done: {json.dumps(results[-1]['after'])}", flush=True)
    data.RESULTS.mkdir(exist_ok=True)
    out = data.RESULTS / f"{args.output}.json"
    out.write_text(json.dumps({"benchmark": "search_latency", "sizes": results}, indent=2))
    plot(results, data.RESULTS / f"{args.output}.png")
    print(table(results))
    print(f"wrote {out} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
