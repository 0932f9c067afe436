"""Searches interleaved with writes: the CPU of each search, and the latency of the one right
after a write, with a small scope's full-text cache caught up on the event loop or in a thread.

In one process, on the 10k-entry store of bench/http_load.py: searches go through the ASGI
app (fts, limit 10) and one `remember` is written every `--every` searches. Each round runs
the same searches twice, once with the store's `_CATCH_UP_ROWS` bound at 0 (a cache with
anything to read takes a worker thread, as before this bound existed) and once at its
default, in alternating order; the write's own CPU is not counted.

    python bench/search_after_writes.py --rounds 12   # bench/results/search_after_writes.json
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus
import http_load
from http_overhead import search_through

from powercontext import ServerSettings
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import RememberMemoryRequest
from powercontext.server.app import create_app
from powercontext.storage.sqlite import store as sqlite_store


async def measure(
    db: Path, queries: list[str], vocabulary: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
    )
    app = create_app(settings)
    rng = random.Random(args.seed + 1)
    bounds = {"thread": 0, "loop": sqlite_store._CATCH_UP_ROWS}
    cpu: dict[str, list[float]] = {name: [] for name in bounds}
    after_write: dict[str, list[float]] = {name: [] for name in bounds}
    async with app.router.lifespan_context(app):
        state = app.state.powercontext
        assert state.runtime is not None
        memory = state.runtime.memory.for_scope(http_load.SCOPE)

        for query in queries:  # warm: every row's token set and every term seen once
            await search_through(app, query)
        for round_ in range(args.rounds):
            order = list(bounds) if round_ % 2 == 0 else list(reversed(bounds))
            for name in order:
                sqlite_store._CATCH_UP_ROWS = bounds[name]
                spent, walls = 0.0, []
                for i in range(args.searches):
                    wrote = i % args.every == 0
                    if wrote:
                        text = " ".join(rng.choices(vocabulary, k=http_load.WORDS_PER_ENTRY))
                        await memory.remember(RememberMemoryRequest(text=text))
                    started, cpu_started = time.perf_counter(), time.process_time()
                    await search_through(app, queries[(round_ * args.searches + i) % len(queries)])
                    spent += time.process_time() - cpu_started
                    if wrote:
                        walls.append((time.perf_counter() - started) * 1e6)
                cpu[name].append(spent * 1e6 / args.searches)
                after_write[name].append(statistics.median(walls))
    sqlite_store._CATCH_UP_ROWS = bounds["loop"]
    return {
        name: {
            "search_cpu_us": round(statistics.median(cpu[name]), 1),
            "search_cpu_us_rounds": [round(v) for v in cpu[name]],
            "after_write_wall_p50_us": round(statistics.median(after_write[name]), 1),
            "after_write_wall_p50_us_rounds": [round(v) for v in after_write[name]],
        }
        for name in bounds
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng, vocabulary, queries = http_load.workload(args.seed)
    with tempfile.TemporaryDirectory(prefix="pc-search-after-writes-") as tmp:
        db = Path(tmp) / "load.db"
        await http_load.seed(db, args.entries, vocabulary, rng)
        result = await measure(db, queries, vocabulary, args)
    return {
        "benchmark": "search_after_writes",
        "entries": args.entries,
        "every": args.every,
        "searches_per_round": args.searches,
        "rounds": args.rounds,
        "catch_up_rows": sqlite_store._CATCH_UP_ROWS,
    } | result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=3, help="one write every N searches")
    parser.add_argument("--searches", type=int, default=300, help="per round and setting")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", default="search_after_writes", help="results file name")
    arguments = parser.parse_args()
    corpus.write_results(arguments.output, asyncio.run(main(arguments)))
