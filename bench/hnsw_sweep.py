"""HNSW build time, query time and recall@30 against exact search, per (M, ef_construction,
ef_search), on the shared benchmark vectors (bench/corpus.py). Chooses IndexOptions' defaults.

hnswlib is driven directly with the parameters the embedded store passes it (inner product
over unit vectors, queries for 40 results as a limit-10 search asks each channel, one thread
per query, all cores for the build). Recall is tie-aware, as in search_latency.py.

    python bench/hnsw_sweep.py                    # 100k vectors; bench/results/hnsw_sweep.json
    python bench/hnsw_sweep.py --entries 20000 --graphs 16:64
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import hnswlib
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--graphs", nargs="+", default=["16:64", "32:128"], help="M:ef_construction"
    )
    parser.add_argument("--ef", type=int, nargs="+", default=[128, 256, 512, 1024])
    args = parser.parse_args()
    corpus = data.build(args.entries, args.queries)
    vectors, queries = corpus.vectors, corpus.query_vectors
    thresholds = []
    for query in queries:
        truth = data.exact_top(vectors, query, 30)
        thresholds.append(float(vectors[truth[-1]] @ query) - 1e-5)
    rows = []
    for graph in args.graphs:
        m, construction = (int(part) for part in graph.split(":"))
        index = hnswlib.Index(space="ip", dim=data.DIMENSION)
        index.init_index(
            max_elements=len(vectors), M=m, ef_construction=construction, random_seed=7
        )
        started = time.perf_counter()
        index.add_items(vectors, np.arange(len(vectors)), num_threads=-1)
        build = time.perf_counter() - started
        for ef in args.ef:
            index.set_ef(ef)
            correct, samples = 0, []
            for query, threshold in zip(queries, thresholds, strict=True):
                started = time.perf_counter()
                labels, _ = index.knn_query(query, k=40, num_threads=1)
                samples.append((time.perf_counter() - started) * 1000)
                top = labels[0][:30]
                correct += int(np.count_nonzero(vectors[top] @ query >= threshold))
            row = {
                "M": m,
                "ef_construction": construction,
                "build_seconds": round(build, 1),
                "ef_search": ef,
                "recall_at_30": round(correct / (30 * len(queries)), 4),
                **data.percentiles(samples),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    data.RESULTS.mkdir(exist_ok=True)
    out = data.RESULTS / "hnsw_sweep.json"
    payload = {"entries": args.entries, "rows": rows, "machine": data.machine()}
    out.write_text(json.dumps(payload, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
