"""Cold first search and cache memory of the embedded store, without and with snapshots.

One SQLite file of N corpus entries (bench/corpus.py: texts and 384-d precomputed vectors) is
built once. Then three fresh processes search it, one after another:

1. `before`: snapshots off, so the first vector search reads every vector back from SQLite
   (what every process did before issue 20);
2. `first`: snapshots on, no snapshot yet: the same fill, plus writing the snapshot;
3. `second`: snapshots on, the snapshot written by `first` is mapped.

Each process times its first vector search, then its first fts search (the BM25 postings
fill), then its first hybrid search (both channels warm by then), then `--queries` warm
searches per mode (limit 10, no reranker, query embedding looked up). Memory is read from
/proc/self/status before the store is opened and after the searches: private (RssAnon) and
file-backed (RssFile, the mapped snapshot pages, shared with the page cache and with every
other process mapping the same file). The page cache is warm in every process (the file was
just written or read): "cold" means a new process, not a cold disk.

    python bench/cold_start.py --entries 200000
    python bench/cold_start.py --entries 1000000 --queries 100 --keep /var/tmp/pc-cold
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data
from search_latency import SCOPE, ingest, settings

from powercontext import open_runtime
from powercontext.memory import SearchMemoryRequest
from powercontext.storage.sqlite import IndexOptions, SqliteMemoryStore, mapped

MODES = ("vector", "fts", "hybrid")


def build(db: Path, entries: int, queries: int) -> dict[str, Any]:
    started = time.perf_counter()
    corpus = data.build(entries, queries)
    rate = asyncio.run(ingest(db, corpus.texts, corpus.embedder()))
    np.save(db.with_suffix(".query-vectors.npy"), corpus.query_vectors)
    db.with_suffix(".queries.json").write_text(json.dumps(corpus.queries))
    return {
        "entries": entries,
        "ingest_per_s": round(rate),
        "seconds": time.perf_counter() - started,
    }


def memory_kb() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


async def measure(db: Path, use_snapshots: bool, count: int) -> dict[str, Any]:
    asked: list[str] = json.loads(db.with_suffix(".queries.json").read_text())[:count]
    vectors = np.load(db.with_suffix(".query-vectors.npy"))[: len(asked)]
    embedder = data.PrecomputedEmbedder(asked, vectors)
    before = memory_kb()
    store = await SqliteMemoryStore.open(db, index=IndexOptions(snapshots=use_snapshots))
    figures: dict[str, Any] = {"snapshots": use_snapshots}
    try:
        async with open_runtime(settings(db), embedding_model=embedder, store=store) as runtime:
            memory = runtime.memory.for_scope(SCOPE)
            for mode in MODES:
                started = time.perf_counter()
                await memory.search(SearchMemoryRequest(query=asked[0], mode=mode))
                figures[f"cold_first_{mode}_ms"] = round((time.perf_counter() - started) * 1000, 1)
            for mode in MODES:
                samples = []
                cpu_started = time.process_time()
                for query in asked:
                    started = time.perf_counter()
                    await memory.search(SearchMemoryRequest(query=query, limit=10, mode=mode))
                    samples.append((time.perf_counter() - started) * 1000)
                figures[mode] = {
                    **data.percentiles(samples),
                    "cpu_ms_per_query": round(
                        (time.process_time() - cpu_started) * 1000 / len(asked), 3
                    ),
                }
        after = memory_kb()
    finally:
        await store.close()
    figures["cache_private_mb"] = round((after["RssAnon"] - before["RssAnon"]) / 1024)
    figures["cache_mapped_mb"] = round((after["RssFile"] - before["RssFile"]) / 1024)
    figures["peak_rss_mb"] = round(after["VmHWM"] / 1024)
    figures["machine"] = data.machine()
    return figures


def child(db: Path, use_snapshots: bool, count: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", str(db), "--queries", str(count)]
    command += ["--snapshots", "on" if use_snapshots else "off"]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def table(runs: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| process | cold vector ms | cold fts ms | cold hybrid ms | vector p50/p95 ms "
        "| fts p50/p95 ms | hybrid p50/p95 ms | cache private MB | cache mapped MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, run in runs.items():
        warm = [f"{run[m]['p50_ms']} / {run[m]['p95_ms']}" for m in MODES]
        lines.append(
            f"| {label} | {run['cold_first_vector_ms']:,} | {run['cold_first_fts_ms']:,} | "
            f"{run['cold_first_hybrid_ms']:,} | {' | '.join(warm)} | "
            f"{run['cache_private_mb']:,} | {run['cache_mapped_mb']:,} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="build the file here and reuse it if present")
    parser.add_argument("--output", default="cold_start")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--snapshots", choices=("on", "off"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        result = asyncio.run(measure(args.measure, args.snapshots == "on", args.queries))
        print(json.dumps(result))
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="pc-cold-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"cold-{args.entries}.db"
    figures: dict[str, Any] = {"benchmark": "cold_start", "entries": args.entries}
    if not db.with_suffix(".queries.json").exists():
        figures["build"] = build(db, args.entries, args.queries)
        print(f"built {db}: {figures['build']}", flush=True)
    mapped.discard(db)
    runs: dict[str, dict[str, Any]] = {}
    for label, use_snapshots in (("before", False), ("first", True), ("second", True)):
        runs[label] = child(db, use_snapshots, args.queries)
        print(f"{label}: {json.dumps(runs[label])}", flush=True)
    figures["runs"] = runs
    figures["snapshot_mb"] = round(
        sum(p.stat().st_blocks * 512 for p in db.parent.glob(db.name + ".cache/*")) / 2**20
    )
    data.write_results(args.output, figures)
    print(table(runs))
    if args.keep is None:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
