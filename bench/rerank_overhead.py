"""The rerank stage's own overhead, model time excluded, at 30 candidates.

Two runtimes on one SQLite file: one without a reranker (coarse limit = k = 10) and one with
a scripted reranker that answers instantly, reversing the pool (coarse limit = 30 candidates).
The difference of their search latencies is what the stage costs a caller besides the model:
20 more candidates fetched and built as hits, rank normalization, the trace and its log line.
The stage is also timed alone (`search.pipeline.rerank` on a pool of 30 hits).

    python bench/rerank_overhead.py        # writes bench/results/rerank_overhead.json
    python bench/rerank_overhead.py --entries 1000 --queries 20 --output /tmp/rerank.json
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
import search_latency

from powercontext import open_runtime
from powercontext.memory import SearchMemoryRequest
from powercontext.memory.models import MemoryHit, MemoryRerankDecision
from powercontext.memory.ports import MemoryReranker
from powercontext.memory.search.candidates import FIXED_POLICY_ID, CandidateChoice
from powercontext.memory.search.rerank_stage import rerank

CANDIDATES = 30


class InstantReranker:
    """Selects the pool's ranks in reverse order, without any model."""

    policy_id = "bench-instant"

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        return MemoryRerankDecision(selected_ranks=tuple(range(len(candidates), 0, -1))[:limit])


async def latencies(
    db: Path, corpus: data.Corpus, reranker: MemoryReranker | None, count: int, rounds: int
) -> tuple[list[float], int]:
    async with open_runtime(
        search_latency.settings(db), embedding_model=corpus.embedder(), memory_reranker=reranker
    ) as runtime:
        memory = runtime.memory.for_scope(search_latency.SCOPE)
        samples, pool = [], 0
        for round_ in range(1 + rounds):  # the first round warms the caches
            for query in corpus.queries[:count]:
                request = SearchMemoryRequest(query=query, limit=10, mode="hybrid")
                started = time.perf_counter()
                page = await memory.search(request)
                if round_:
                    samples.append((time.perf_counter() - started) * 1000)
                    pool += len(page.rerank.candidate_hits) if page.rerank else len(page.hits)
        return samples, pool // len(samples)


async def stage_alone(db: Path, corpus: data.Corpus, count: int) -> list[float]:
    async with open_runtime(
        search_latency.settings(db), embedding_model=corpus.embedder()
    ) as runtime:
        memory = runtime.memory.for_scope(search_latency.SCOPE)
        for query in corpus.queries[:count]:  # the first query with a full pool (at 5k: the first)
            request = SearchMemoryRequest(query=query, limit=CANDIDATES, mode="hybrid")
            pool = (await memory.search(request)).hits
            if len(pool) == CANDIDATES:
                break
    if len(pool) != CANDIDATES:
        raise SystemExit(f"no query found {CANDIDATES} hits: raise --entries or --queries")
    reranker = InstantReranker()
    choice = CandidateChoice(FIXED_POLICY_ID, CANDIDATES)
    samples = []
    for query in corpus.queries[:count]:
        request = SearchMemoryRequest(query=query, limit=10, mode="hybrid")
        started = time.perf_counter()
        await rerank(reranker, request, pool, choice)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=5_000, help="corpus entries (5000)")
    parser.add_argument("--queries", type=int, default=200, help="queries per round (200)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="timed rounds after one warm-up round (1)"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=data.RESULTS / "rerank_overhead.json",
        help="results file (bench/results/rerank_overhead.json)",
    )
    args = parser.parse_args(argv)
    if args.queries < 1 or args.rounds < 1:
        parser.error("--queries and --rounds must be at least 1")
    return args


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    count = args.queries
    corpus = data.build(args.entries, count)
    with tempfile.TemporaryDirectory(prefix="pc-rerank-") as tmp:
        db = Path(tmp) / "memory.db"
        await search_latency.ingest(db, corpus.texts, corpus.embedder())
        plain, plain_pool = await latencies(db, corpus, None, count, args.rounds)
        reranked, pool = await latencies(db, corpus, InstantReranker(), count, args.rounds)
        alone = await stage_alone(db, corpus, count)
    without, with_ = data.percentiles(plain), data.percentiles(reranked)
    result: dict[str, Any] = {
        "benchmark": "rerank_overhead",
        "entries": args.entries,
        "mode": "hybrid",
        "limit": 10,
        "mean_pool_without": plain_pool,
        "mean_pool_with": pool,
        "search_without_reranker": without,
        "search_with_instant_reranker": with_,
        "overhead_p50_ms": round(with_["p50_ms"] - without["p50_ms"], 3),
        "overhead_mean_ms": round(with_["mean_ms"] - without["mean_ms"], 3),
        "stage_alone_30_candidates": data.percentiles(alone),
        "machine": data.machine(),
    }
    return result


def main() -> None:
    args = parse_args()
    result = asyncio.run(measure(args))
    out: Path = args.output
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
