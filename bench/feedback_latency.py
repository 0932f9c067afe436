"""What the search defaults cost a hybrid query at 100k against the pre-issue-17 search path.

    python bench/feedback_latency.py                          # 100k, 6 rounds of 100 queries
    python bench/feedback_latency.py --entries 20000 --rounds 3

One SQLite file of the shared synthetic corpus (bench/corpus.py: no threads, precomputed
vectors, so query embedding is excluded), searched through `open_runtime` under two or more
search settings in the same process. The settings take turns (round 1: A, B; round 2: B, A;
...), each round asking every query once in hybrid mode (limit 10), so the machine's load
falls on every setting alike. Each setting's figure is the median over rounds of its CPU ms
per query (process time) and of its wall p50; the ratio to `before` (full-text feedback off:
the search path before issue 17) is what the issue's 10% bound is checked against.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.storage.sqlite import SqliteMemoryStore

SCOPE = "bench"
BATCH = 5_000
SETTINGS: dict[str, dict[str, Any]] = {
    "before": {"search_feedback_docs": 0},
    "defaults": {},
}


def settings(db: Path, overrides: dict[str, Any]) -> ServerSettings:
    base = ServerSettings()
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
        runtime=RuntimeConfig(**{**base.runtime.model_dump(), **overrides}),
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = data.build(args.entries, args.queries)
    names = list(SETTINGS) + [f"set {item}" for item in args.set]
    chosen = {**SETTINGS, **{f"set {i}": _parse(i) for i in args.set}}
    with tempfile.TemporaryDirectory(prefix="pc-feedback-") as tmp:
        db = Path(tmp) / "search.db"
        async with open_runtime(settings(db, {}), embedding_model=corpus.embedder()) as rt:
            memory = rt.memory.for_scope(SCOPE)
            for offset in range(0, len(corpus.texts), BATCH):
                await memory.remember_many(
                    [RememberMemoryRequest(text=t) for t in corpus.texts[offset : offset + BATCH]]
                )
        store = await SqliteMemoryStore.open(db)
        cpu: dict[str, list[float]] = {name: [] for name in names}
        p50: dict[str, list[float]] = {name: [] for name in names}
        loads: list[float] = []
        try:
            async with AsyncExitStack() as stack:
                scopes = {}
                for name in names:
                    opened = await stack.enter_async_context(
                        open_runtime(
                            settings(db, chosen[name]),
                            embedding_model=corpus.embedder(),
                            store=store,
                        )
                    )
                    scopes[name] = opened.memory.for_scope(SCOPE)
                    # warm: postings, term weights, vector index
                    for query in corpus.queries[:10]:
                        await scopes[name].search(SearchMemoryRequest(query=query, mode="hybrid"))
                for round_ in range(args.rounds):
                    order = names if round_ % 2 == 0 else names[::-1]
                    for name in order:
                        samples = []
                        started_cpu = time.process_time()
                        for query in corpus.queries:
                            request = SearchMemoryRequest(query=query, limit=10, mode="hybrid")
                            started = time.perf_counter()
                            await scopes[name].search(request)
                            samples.append((time.perf_counter() - started) * 1000)
                        cpu[name].append(
                            (time.process_time() - started_cpu) * 1000 / len(corpus.queries)
                        )
                        p50[name].append(statistics.median(samples))
                    loads.append(data.machine()["load_average"][0])
        finally:
            await store.close()
    base = statistics.median(cpu["before"])
    return {
        "entries": args.entries,
        "queries_per_round": args.queries,
        "rounds": args.rounds,
        "settings": {name: chosen[name] for name in names},
        "cpu_ms_per_query": {name: round(statistics.median(v), 3) for name, v in cpu.items()},
        "cpu_ratio_to_before": {
            name: round(statistics.median(v) / base, 3) for name, v in cpu.items()
        },
        "wall_p50_ms": {name: round(statistics.median(v), 3) for name, v in p50.items()},
        "cpu_ms_per_round": {name: [round(x, 3) for x in v] for name, v in cpu.items()},
        "load_average_1m_per_round": loads,
        "machine": data.machine(),
    }


def _parse(item: str) -> dict[str, Any]:
    key, _, value = item.partition("=")
    try:
        parsed: Any = int(value)
    except ValueError:
        try:
            parsed = float(value)
        except ValueError:
            parsed = value
    return {key: parsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--set", action="append", default=[], help="another setting, SETTING=VALUE")
    parser.add_argument("--output", default="feedback_latency")
    args = parser.parse_args()
    data.write_results(args.output, asyncio.run(run(args)))


if __name__ == "__main__":
    main()
