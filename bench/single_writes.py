"""Ingest of single writes: one LoCoMo conversation written turn by turn (one `remember` per
turn, with `thread` and `occurred_at`, as an agent writes) against the same conversation as
one `remember_many`, through open_runtime on a fresh SQLite file, at the current defaults.

    python bench/single_writes.py                        # conv-26, local MiniLM and no model
    python bench/single_writes.py --conversation conv-30 --embedding none --embedding hash

Contextual indexing by thread widens the index of the two previous turns of the thread on
each write (their tokens are rewritten and their vectors re-embedded), so a turn-by-turn
write costs more than its share of a batch; this measures by how much. Results go to
bench/results/single_writes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data

from powercontext import ServerSettings, open_runtime
from powercontext.bench.locomo.dataset import load_dataset
from powercontext.bench.locomo.ingest import plan_ingest
from powercontext.config import DatabaseConfig, InferenceConfig

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"


async def _write(requests: list[Any], embedding: str, write: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        settings = ServerSettings(
            database=DatabaseConfig(url=f"sqlite:///{Path(folder) / 'w.db'}"),
            inference=InferenceConfig(embedding_model=embedding),
        )
        async with open_runtime(settings) as runtime:
            memory = runtime.memory.for_scope("conversation")
            started = time.perf_counter()
            if write == "batch":
                await memory.remember_many(requests)
            else:
                for request in requests:
                    await memory.remember(request)
            seconds = time.perf_counter() - started
    return {"entries": len(requests), "seconds": seconds, "entries_per_s": len(requests) / seconds}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument(
        "--embedding", action="append", help="an embedding model setting (repeatable)"
    )
    parser.add_argument("--output", default="single_writes")
    args = parser.parse_args()
    dataset = load_dataset(args.data)
    conversation = next(c for c in dataset.conversations if c.sample_id == args.conversation)
    requests = list(plan_ingest(conversation, "turn").requests)
    figures: dict[str, Any] = {"conversation": args.conversation, "runs": []}
    for embedding in args.embedding or ["none", "local:all-minilm-l6-v2"]:
        for write in ("turns", "batch"):
            run = {
                "embedding": embedding,
                "write": write,
                **await _write(requests, embedding, write),
            }
            print(run, flush=True)
            figures["runs"].append(run)
    data.write_results(args.output, figures)


if __name__ == "__main__":
    asyncio.run(main())
