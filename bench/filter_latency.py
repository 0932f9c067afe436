"""Hybrid search latency with a filter, on the embedded store (issue 18).

Ingests the shared synthetic corpus (bench/corpus.py) with two metadata keys: `bucket`
(i % 100, so `bucket == 0` keeps 1% of entries) and `half` (i % 2, so `half == 0` keeps 50%).
Then times hybrid searches without a filter, with the 1% filter and with the 50% one, and
checks that every filtered page is full (a filter holds inside each channel before top-k).

Each filtered query is also timed with the filter scan unshared (each channel scanning on
its own, as before storage/sqlite/filter_keys.py), alternating query by query with the
shared timing, so both see the same machine load (`..._unshared` in the results).

    PYTHONPATH=src python bench/filter_latency.py --entries 100000 --queries 50
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.filters import MemoryFilter
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.filter_keys import Keys, SharedFilterScans

SCOPE = "bench"
BATCH = 5_000
FILTERS: dict[str, MemoryFilter | None] = {
    "none": None,
    "1%": MemoryFilter(metadata={"bucket": {"eq": 0}}),  # type: ignore[dict-item]
    "50%": MemoryFilter(metadata={"half": {"eq": 0}}),  # type: ignore[dict-item]
}


class UnsharedFilterScans(SharedFilterScans):
    """Every channel scans on its own: the behaviour before scans were shared."""

    async def keys(
        self,
        scope_id: str,
        revision: int,
        where: MemoryFilter | None,
        scan: Callable[[], Awaitable[Keys | None]],
    ) -> Keys | None:
        return None if where is None else await scan()


async def run(entries: int, queries: int) -> dict[str, Any]:
    corpus = data.build(entries, queries)
    with tempfile.TemporaryDirectory() as tmp:
        settings = ServerSettings(
            database=DatabaseConfig(url=f"sqlite:///{Path(tmp) / 'bench.db'}"),
            inference=InferenceConfig(embedding_model="none"),
        )
        async with open_runtime(settings, embedding_model=corpus.embedder()) as runtime:
            memory = runtime.memory.for_scope(SCOPE)
            started = time.perf_counter()
            for offset in range(0, entries, BATCH):
                await memory.remember_many(
                    [
                        RememberMemoryRequest(
                            text=text, metadata={"bucket": i % 100, "half": i % 2}
                        )
                        for i, text in enumerate(
                            corpus.texts[offset : offset + BATCH], start=offset
                        )
                    ]
                )
            ingest_s = time.perf_counter() - started
            figures: dict[str, Any] = {"entries": entries, "ingest_s": round(ingest_s, 1)}
            store = runtime.store
            assert isinstance(store, SqliteMemoryStore)
            variants = {"": SharedFilterScans(), "_unshared": UnsharedFilterScans()}
            for name, where in FILTERS.items():
                await memory.search(  # warm the caches
                    SearchMemoryRequest(query=corpus.queries[0], mode="hybrid", filter=where)
                )
                samples: dict[str, list[float]] = {suffix: [] for suffix in variants}
                short = 0
                for query in corpus.queries[:queries]:
                    request = SearchMemoryRequest(
                        query=query, mode="hybrid", limit=10, filter=where, min_similarity=-1
                    )
                    for suffix, scans in variants.items():
                        if where is None and suffix:
                            continue  # no filter, no scan: nothing to compare
                        store.filter_scans = scans
                        began = time.perf_counter()
                        page = await memory.search(request)
                        samples[suffix].append((time.perf_counter() - began) * 1000)
                        short += len(page.hits) < 10
                for suffix, timings in samples.items():
                    if timings:
                        figures[f"hybrid_filter_{name}{suffix}"] = {
                            **data.percentiles(timings),
                            "pages_short_of_limit": short,
                        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    figures = asyncio.run(run(args.entries, args.queries))
    figures["machine"] = data.machine()
    data.write_results("filter_latency", figures)


if __name__ == "__main__":
    main()
