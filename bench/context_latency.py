"""What contextual indexing costs the full-text channel: fts latency and text-only ingest at
100k synthetic entries (bench/corpus.py), with the issue-11 features off and on.

Each variant ingests the same texts into its own SQLite file through `remember_many` (batches
of 5,000; no group key, so each batch is one sequence and every entry carries the words of two
neighbours on each side), then runs the same 200 fts searches (limit 10) after one cold one.
Vectors are off: the contextual vector costs a second embedding per entry, which is the
embedding model's cost, not the store's.

    python bench/context_latency.py               # 100k; bench/results/context_latency.json
    python bench/context_latency.py --entries 20000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest

VARIANTS = {
    "off (defaults)": RuntimeConfig(),
    "context +-2, fts only": RuntimeConfig(
        index_context_before=2, index_context_after=2, index_context_vector=False
    ),
    "context +-2, fts only, query stop words dropped": RuntimeConfig(
        index_context_before=2,
        index_context_after=2,
        index_context_vector=False,
        analyzer_drop_query_stopwords=True,
    ),
}


async def measure(
    db: Path, runtime: RuntimeConfig, texts: list[str], queries: list[str]
) -> dict[str, Any]:
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
        runtime=runtime,
    )
    async with open_runtime(settings) as opened:
        memory = opened.memory.for_scope("bench")
        started = time.perf_counter()
        for offset in range(0, len(texts), 5_000):
            batch = texts[offset : offset + 5_000]
            await memory.remember_many([RememberMemoryRequest(text=t) for t in batch])
        rate = len(texts) / (time.perf_counter() - started)
        await memory.search(SearchMemoryRequest(query=queries[0], mode="fts"))
        samples = []
        for query in queries:
            started = time.perf_counter()
            await memory.search(SearchMemoryRequest(query=query, mode="fts", limit=10))
            samples.append((time.perf_counter() - started) * 1000)
        return {"ingest_per_s": round(rate), **data.percentiles(samples)}


async def run(entries: int, query_count: int) -> dict[str, Any]:
    texts = data.texts(entries)
    queries = data.queries(texts, query_count)
    results = {}
    with tempfile.TemporaryDirectory(prefix="pc-context-") as tmp:
        for index, (name, runtime) in enumerate(VARIANTS.items()):
            results[name] = await measure(Path(tmp) / f"{index}.db", runtime, texts, queries)
            print(f"{name:50} {json.dumps(results[name])}", flush=True)
    return {"entries": entries, "variants": results, "machine": data.machine()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--output", type=Path, default=data.RESULTS / "context_latency.json")
    args = parser.parse_args()
    payload = asyncio.run(run(args.entries, args.queries))
    args.output.parent.mkdir(exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
