"""Erasure on the embedded store (issue 18): forget one entry, then a whole scope.

Ingests the shared synthetic corpus (bench/corpus.py, precomputed vectors) into one scope,
warms the caches with a hybrid search, then times:

- `forget_one`: `forget` of one entry, `--forgets` times (a different entry each time): the
  delete transaction, FTS5 `optimize` and the truncating WAL checkpoint;
- `first_search_after_forget`: the hybrid search right after each forget, which reads the
  scope's BM25 postings and vector matrix afresh (an erasure drops them from memory);
- `warm_search_after`: the same search again, caches filled;
- `forget_scope`: the erasure of every remaining entry, and the first search after it.

    PYTHONPATH=src python bench/erasure.py                   # 10k entries, 5 forgets
    PYTHONPATH=src python bench/erasure.py --entries 100000 --forgets 3
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
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import ForgetScopeRequest, RememberMemoryRequest, SearchMemoryRequest

SCOPE = "bench"
BATCH = 5_000


def _ms(began: float) -> float:
    return (time.perf_counter() - began) * 1000


async def run(entries: int, forgets: int) -> dict[str, Any]:
    corpus = data.build(entries, forgets + 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        settings = ServerSettings(
            database=DatabaseConfig(url=f"sqlite:///{path}"),
            inference=InferenceConfig(embedding_model="none"),
        )
        async with open_runtime(settings, embedding_model=corpus.embedder()) as runtime:
            memory = runtime.memory.for_scope(SCOPE)
            entry_ids: list[str] = []
            started = time.perf_counter()
            for offset in range(0, entries, BATCH):
                written = await memory.remember_many(
                    [RememberMemoryRequest(text=t) for t in corpus.texts[offset : offset + BATCH]]
                )
                entry_ids += [entry.entry_id for entry in written.entries]
            figures: dict[str, Any] = {
                "entries": entries,
                "ingest_s": round(time.perf_counter() - started, 1),
                "file_mb_before": round(path.stat().st_size / 2**20, 1),
            }
            search = SearchMemoryRequest(query=corpus.queries[0], mode="hybrid", limit=10)
            began = time.perf_counter()
            await memory.search(search)
            figures["first_search_before_ms"] = round(_ms(began), 1)
            began = time.perf_counter()
            await memory.search(search)
            figures["warm_search_before_ms"] = round(_ms(began), 1)

            forget_ms, first_ms, warm_ms = [], [], []
            for index in range(forgets):
                victim = entry_ids[(index + 1) * entries // (forgets + 1)]
                began = time.perf_counter()
                await memory.forget(victim)
                forget_ms.append(_ms(began))
                began = time.perf_counter()
                await memory.search(search)
                first_ms.append(_ms(began))
                began = time.perf_counter()
                await memory.search(search)
                warm_ms.append(_ms(began))
            figures["forget_one"] = data.percentiles(forget_ms)
            figures["first_search_after_forget"] = data.percentiles(first_ms)
            figures["warm_search_after"] = data.percentiles(warm_ms)

            began = time.perf_counter()
            result = await memory.forget_scope(ForgetScopeRequest())
            figures["forget_scope_ms"] = round(_ms(began), 1)
            figures["forget_scope_versions"] = result.erased_versions
            began = time.perf_counter()
            page = await memory.search(search)
            figures["first_search_after_forget_scope_ms"] = round(_ms(began), 1)
            assert page.hits == ()
            figures["file_mb_after"] = round(path.stat().st_size / 2**20, 1)
            wal = path.with_name(path.name + "-wal")
            figures["wal_bytes_after"] = wal.stat().st_size if wal.exists() else 0
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--forgets", type=int, default=5)
    args = parser.parse_args()
    figures = asyncio.run(run(args.entries, args.forgets))
    figures["machine"] = data.machine()
    data.write_results("erasure", figures)


if __name__ == "__main__":
    main()
