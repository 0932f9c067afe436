"""What `search_fts_common_term_entries` buys and costs at scale on PostgreSQL (issue 20).

    python bench/postgres_scale.py --entries 1000000 --data /tmp/pg1m ...   # build once
    python bench/fts_common_terms.py --entries 1000000 --data /tmp/pg1m --bounds 0 5000
    python bench/fts_common_terms.py --url postgresql://user@host/db --entries 100000

On a database bench/postgres_scale.py built (its bundled server's `--data` directory, or
`--url`), the same queries (postgres_scale's workload for `--entries`) are searched through
`MemoryService` with the server's search defaults, once per bound in `--bounds` (0: every
term finds entries, the exact BM25 top), the bounds taking turns query by query so that the
machine's load falls on each alike. For each bound and mode (fts, hybrid; limit 10): p50 /
p95 / p99 / mean wall ms, and how far its hits agree with the exact run's: the share of the
exact top 10 it returns, and the share of queries whose hits come back in the exact order.
Writes bench/results/fts_common_terms_<entries>.json (or `--output NAME`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import postgres_scale as scale

from powercontext.config import ServerSettings
from powercontext.memory.models import SearchMemoryRequest
from powercontext.memory.service import MemoryService
from powercontext.runtime import search_config
from powercontext.storage.postgres import PostgresMemoryStore

MODES = ("fts", "hybrid")


async def measure(url: str, args: argparse.Namespace) -> dict[str, Any]:
    _, pool = scale.workload("corpus", args.entries, args.queries, args.seed)
    store = await PostgresMemoryStore.open(url)
    try:
        if await store.head(scale.SCOPE) is None:
            raise SystemExit(f"no scope {scale.SCOPE!r} here: build it with postgres_scale.py")
        defaults = search_config(ServerSettings())
        embedder = scale.make_embedder("corpus")
        services = {
            bound: MemoryService(
                store,
                embedder=embedder,
                config=dataclasses.replace(defaults, fts_common_term_entries=bound),
            )
            for bound in args.bounds
        }
        times: dict[tuple[int, str], list[float]] = {(b, m): [] for b in args.bounds for m in MODES}
        hits: dict[tuple[int, str], list[list[str]]] = {k: [] for k in times}
        for index, query in enumerate(pool):
            turn = args.bounds if index % 2 == 0 else args.bounds[::-1]
            for mode in MODES:
                for bound in turn:
                    request = SearchMemoryRequest(query=query, limit=10, mode=mode)  # type: ignore[arg-type]
                    started = time.perf_counter()
                    page = await services[bound].search(scale.SCOPE, request)
                    elapsed = (time.perf_counter() - started) * 1000
                    if index >= args.warmup:
                        times[bound, mode].append(elapsed)
                    hits[bound, mode].append([hit.entry_id for hit in page.hits])
    finally:
        await store.close()
    figures: dict[str, Any] = {}
    for (bound, mode), samples in times.items():
        exact = hits[0, mode]
        mine = hits[bound, mode]
        overlap = [len(set(a) & set(b)) / len(a) for a, b in zip(exact, mine, strict=True) if a]
        same = sum(a == b for a, b in zip(exact, mine, strict=True)) / len(exact)
        figures.setdefault(str(bound), {})[mode] = {
            **scale.percentiles(samples),
            "exact_top10_share": round(statistics.mean(overlap), 4),
            "same_order_share": round(same, 4),
        }
        print(f"  bound {bound:>7} {mode:<6} {figures[str(bound)][mode]}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000, help="the database's size")
    parser.add_argument("--data", type=Path, help="postgres_scale.py's --data directory")
    parser.add_argument("--url", help="an existing PostgreSQL holding postgres_scale's scope")
    parser.add_argument("--bounds", type=int, nargs="+", default=[0, 5_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7, help="postgres_scale.py's --seed")
    parser.add_argument("--output", help="results file name")
    args = parser.parse_args()
    if 0 not in args.bounds:
        args.bounds = [0, *args.bounds]  # the exact run every other is compared with
    if (args.url is None) == (args.data is None):
        parser.error("name the database: --data DIR or --url URL")
    load = scale.LoadSampler()
    server = None if args.url else scale.start_server(args.data / "data", keep=True)
    try:
        url = args.url or server.get_uri()
        result: dict[str, Any] = {"entries": args.entries, "queries": args.queries}
        result["bounds"] = asyncio.run(measure(url, args))
    finally:
        if server is not None:
            server.cleanup()
    result["machine"] = {"load_average_1m": load.summary()}
    name = args.output or f"fts_common_terms_{args.entries}"
    path = scale.RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
