"""Side by side, in one run, same texts, same vectors, same queries (bench/corpus.py):

* PowerContext: `memory.search` through open_runtime on the embedded SQLite store;
* LanceDB (PyPI `lancedb`): native full-text index + IVF_HNSW_SQ vector index, hybrid search
  with its RRFReranker;
* a plain baseline: stdlib sqlite3 FTS5 (`porter unicode61`, ORDER BY rank) + exact numpy
  search + RRF in Python.

Every system is asked for 10 results with their text per query; query embedding is excluded
(vectors are precomputed). Ratios are ours / peer: below 1 means PowerContext is faster.

    pip install lancedb==0.40.0            # the peer (not a PowerContext dependency)
    python bench/peers.py                  # 100k entries; writes bench/results/peers_100000.json
    python bench/peers.py --entries 10000 --queries 100
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data
import search_latency

from powercontext.storage.sqlite import IndexOptions

LIMIT = 10
CHANNEL = 40  # what PowerContext asks each channel for at limit 10: max(4 * 10, 32)
RRF_K = 60
LANCEDB_VERSION = "0.40.0"  # the version docs/performance.md's side-by-side table ran
Search = Callable[[str, npt.NDArray[np.float32]], list[Any]]


def timed(search: Search, corpus: data.Corpus, count: int) -> dict[str, float]:
    search(corpus.queries[0], corpus.query_vectors[0])  # warm caches
    samples = []
    for query, vector in zip(corpus.queries[:count], corpus.query_vectors[:count], strict=True):
        started = time.perf_counter()
        found = search(query, vector)
        samples.append((time.perf_counter() - started) * 1000)
        assert len(found) <= LIMIT
    return data.percentiles(samples)


def lancedb_figures(corpus: data.Corpus, directory: Path, count: int) -> dict[str, Any]:
    os.environ.setdefault("LANCE_LOG", "error")  # silences a per-query deprecation warning
    import lancedb
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    started = time.perf_counter()
    db = lancedb.connect(str(directory))
    flat = pa.array(corpus.vectors.reshape(-1), type=pa.float32())
    table = db.create_table(
        "memory",
        data=pa.table(
            {
                "id": pa.array(np.arange(len(corpus.texts)), type=pa.int64()),
                "text": pa.array(corpus.texts),
                "vector": pa.FixedSizeListArray.from_arrays(flat, data.DIMENSION),
            }
        ),
    )
    table.create_fts_index("text", use_tantivy=False)
    table.create_index(metric="cosine", index_type="IVF_HNSW_SQ")
    figures: dict[str, Any] = {"build_seconds": round(time.perf_counter() - started, 1)}
    reranker = RRFReranker()

    def fts(query: str, _vector: npt.NDArray[np.float32]) -> list[Any]:
        return table.search(query, query_type="fts").select(["id", "text"]).limit(LIMIT).to_list()

    def vector(_query: str, vector: npt.NDArray[np.float32]) -> list[Any]:
        search = table.search(vector).distance_type("cosine").select(["id", "text"])
        return search.limit(LIMIT).to_list()

    def hybrid(query: str, vector: npt.NDArray[np.float32]) -> list[Any]:
        search = table.search(query_type="hybrid").vector(vector).text(query)
        return search.select(["id", "text"]).rerank(reranker).limit(LIMIT).to_list()

    for mode, run in (("fts", fts), ("vector", vector), ("hybrid", hybrid)):
        figures[mode] = timed(run, corpus, count)
    correct = 0  # tie-aware, as in search_latency.recall
    for query_vector in corpus.query_vectors[:count]:
        rows = table.search(query_vector).distance_type("cosine").select(["id"]).limit(30)
        found = np.asarray([row["id"] for row in rows.to_list()], dtype=np.int64)
        truth = data.exact_top(corpus.vectors, query_vector, 30)
        threshold = float(corpus.vectors[truth[-1]] @ query_vector) - 1e-5
        correct += int(np.count_nonzero(corpus.vectors[found] @ query_vector >= threshold))
    figures["vector_recall_at_30"] = round(correct / (30 * count), 4)
    return figures


def _fts5_expression(query: str) -> str:
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in query.split())


def baseline_figures(corpus: data.Corpus, directory: Path, count: int) -> dict[str, Any]:
    started = time.perf_counter()
    conn = sqlite3.connect(directory / "baseline.db")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5 (text, tokenize = 'porter unicode61')")
    with conn:
        conn.executemany(
            "INSERT INTO docs (rowid, text) VALUES (?, ?)", enumerate(corpus.texts, start=1)
        )
    vectors = corpus.vectors
    figures: dict[str, Any] = {"build_seconds": round(time.perf_counter() - started, 1)}

    def fts_keys(query: str, limit: int) -> list[int]:
        rows = conn.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?",
            (_fts5_expression(query), limit),
        ).fetchall()
        return [int(row[0]) for row in rows]

    def vector_keys(vector: npt.NDArray[np.float32], limit: int) -> list[int]:
        return (data.exact_top(vectors, vector, limit) + 1).tolist()

    def texts(keys: list[int]) -> list[Any]:
        marks = ",".join("?" * len(keys))
        found = dict(conn.execute(f"SELECT rowid, text FROM docs WHERE rowid IN ({marks})", keys))
        return [(key, found[key]) for key in keys]

    def fts(query: str, _vector: npt.NDArray[np.float32]) -> list[Any]:
        return texts(fts_keys(query, LIMIT))

    def vector(_query: str, vector: npt.NDArray[np.float32]) -> list[Any]:
        return texts(vector_keys(vector, LIMIT))

    def hybrid(query: str, vector: npt.NDArray[np.float32]) -> list[Any]:
        scores: dict[int, float] = {}
        for ranked in (fts_keys(query, CHANNEL), vector_keys(vector, CHANNEL)):
            for rank, key in enumerate(ranked, start=1):
                scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
        best = sorted(scores, key=lambda key: (-scores[key], key))[:LIMIT]
        return texts(best)

    for mode, run in (("fts", fts), ("vector", vector), ("hybrid", hybrid)):
        figures[mode] = timed(run, corpus, count)
    figures["vector_recall_at_30"] = 1.0
    conn.close()
    return figures


async def ours(corpus: data.Corpus, directory: Path, count: int) -> dict[str, Any]:
    db = directory / "powercontext.db"
    started = time.perf_counter()
    rate = await search_latency.ingest(db, corpus.texts, corpus.embedder())
    figures = await search_latency.timed_searches(db, corpus, IndexOptions(), count)
    figures["build_seconds"] = round(time.perf_counter() - started, 1)
    figures["ingest_with_vectors_per_s"] = round(rate)
    return figures


def ratios(mine: dict[str, Any], peer: dict[str, Any]) -> dict[str, float]:
    return {
        f"{mode} {stat}": round(mine[mode][stat] / peer[mode][stat], 2)
        for mode in ("fts", "vector", "hybrid")
        for stat in ("p50_ms", "p95_ms", "p99_ms")
    }


def table(result: dict[str, Any]) -> str:
    systems = ("powercontext", "lancedb", "baseline")
    lines = ["| mode | stat | " + " | ".join(systems) + " | ours/lancedb | ours/baseline |"]
    lines.append("|---|---|---|---|---|---|---|")
    for mode in ("fts", "vector", "hybrid"):
        for stat in ("p50_ms", "p95_ms", "p99_ms"):
            cells = [str(result[s][mode][stat]) for s in systems]
            key = f"{mode} {stat}"
            lines.append(
                f"| {mode} | {stat[:3]} | " + " | ".join(cells) + " | "
                f"{result['ratio_vs_lancedb'][key]} | {result['ratio_vs_baseline'][key]} |"
            )
    recalls = " | ".join(str(result[s]["vector_recall_at_30"]) for s in systems)
    builds = " | ".join(str(result[s]["build_seconds"]) for s in systems)
    lines += [f"| vector | recall@30 | {recalls} | | |", f"| load | seconds | {builds} | | |"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if importlib.util.find_spec("lancedb") is None:  # before any work
        sys.exit(
            "peers.py needs LanceDB, not a PowerContext dependency: "
            f"pip install lancedb=={LANCEDB_VERSION} (the version docs/performance.md quotes)"
        )
    corpus = data.build(args.entries, args.queries)
    result: dict[str, Any] = {"benchmark": "peers", "entries": args.entries, "limit": LIMIT}
    with tempfile.TemporaryDirectory(prefix="pc-peers-") as tmp:
        result["powercontext"] = asyncio.run(ours(corpus, Path(tmp), args.queries))
        print("powercontext done", flush=True)
        result["lancedb"] = lancedb_figures(corpus, Path(tmp) / "lance", args.queries)
        print("lancedb done", flush=True)
        result["baseline"] = baseline_figures(corpus, Path(tmp), args.queries)
    import lancedb

    result["lancedb_version"] = lancedb.__version__
    result["ratio_vs_lancedb"] = ratios(result["powercontext"], result["lancedb"])
    result["ratio_vs_baseline"] = ratios(result["powercontext"], result["baseline"])
    result["machine"] = data.machine()
    data.RESULTS.mkdir(exist_ok=True)
    out = data.RESULTS / f"peers_{args.entries}.json"
    out.write_text(json.dumps(result, indent=2))
    print(table(result))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
