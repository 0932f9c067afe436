"""How long a small scope's full-text search holds the event loop (storage/sqlite/store.py).

A scope of up to 16,384 cached versions is searched on the loop when its cache is current.
This writes such a scope at the bound (every entry holds one common word and 12 of 3,000
others) and times `fts_candidates` for a query of the common word alone (every row scored,
the dense pass), of it with two rare words, and of two rare words (the sparse pass).

    python bench/fts_on_loop.py          # writes bench/results/fts_on_loop.json
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

from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.ports import FtsQuery
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus


async def main(args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    words = [f"w{i}" for i in range(3000)]
    texts = [" ".join(["common", *rng.choices(words, k=12)]) for _ in range(args.entries)]
    queries = {"common word": ["common"], "common + 2 rare": ["common", "w1", "w2"]}
    queries["2 rare"] = ["w7", "w9"]
    figures: dict[str, object] = {"entries": args.entries, "limit": 120, "runs": args.runs}
    with tempfile.TemporaryDirectory(prefix="pc-fts-on-loop-") as tmp:
        store = await SqliteMemoryStore.open(Path(tmp) / "m.db")
        memory = MemoryService(store).for_scope("s")
        await memory.remember_many([RememberMemoryRequest(text=text) for text in texts])
        for name, terms in queries.items():
            query = FtsQuery("s", 1, terms, limit=120)
            await store.fts_candidates(query)  # fills the cache, in a thread
            walls = []
            for _ in range(args.runs):
                started = time.perf_counter()
                await store.fts_candidates(query)
                walls.append((time.perf_counter() - started) * 1000.0)
            figures[name] = {
                "p50_ms": round(statistics.median(walls), 3),
                "max_ms": round(max(walls), 3),
            }
        await store.close()
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=16_384)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    corpus.write_results("fts_on_loop", asyncio.run(main(parser.parse_args())))
