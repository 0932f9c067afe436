"""The rerank stage's own overhead, model time excluded, at 30 candidates.

Two runtimes on one SQLite file: one without a reranker (coarse limit = k = 10) and one with
a scripted reranker that answers instantly, reversing the pool (coarse limit = 30 candidates).
The difference of their search latencies is what the stage costs a caller besides the model:
20 more candidates fetched and built as hits, rank normalization, the trace and its log line.
The stage is also timed alone (`search.pipeline.rerank` on a pool of 30 hits).

    python bench/rerank_overhead.py        # writes bench/results/rerank_overhead.json
"""

from __future__ import annotations

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
from powercontext.memory.search.pipeline import rerank

ENTRIES = 5_000
CANDIDATES = 30


class InstantReranker:
    """Selects the pool's ranks in reverse order, without any model."""

    policy_id = "bench-instant"

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        return MemoryRerankDecision(selected_ranks=tuple(range(len(candidates), 0, -1))[:limit])


async def latencies(
    db: Path, corpus: data.Corpus, reranker: MemoryReranker | None, count: int
) -> tuple[list[float], int]:
    async with open_runtime(
        search_latency.settings(db), embedding_model=corpus.embedder(), memory_reranker=reranker
    ) as runtime:
        memory = runtime.memory.for_scope(search_latency.SCOPE)
        samples, pool = [], 0
        for round_ in range(2):  # the first round warms the caches
            for query in corpus.queries[:count]:
                request = SearchMemoryRequest(query=query, limit=10, mode="hybrid")
                started = time.perf_counter()
                page = await memory.search(request)
                if round_:
                    samples.append((time.perf_counter() - started) * 1000)
                    pool += len(page.rerank.candidate_hits) if page.rerank else len(page.hits)
        return samples, pool // count


async def stage_alone(db: Path, corpus: data.Corpus, count: int) -> list[float]:
    async with open_runtime(
        search_latency.settings(db), embedding_model=corpus.embedder()
    ) as runtime:
        memory = runtime.memory.for_scope(search_latency.SCOPE)
        request = SearchMemoryRequest(query=corpus.queries[0], limit=CANDIDATES, mode="hybrid")
        pool = (await memory.search(request)).hits
    assert len(pool) == CANDIDATES
    reranker = InstantReranker()
    choice = CandidateChoice(FIXED_POLICY_ID, CANDIDATES)
    samples = []
    for query in corpus.queries[:count]:
        request = SearchMemoryRequest(query=query, limit=10, mode="hybrid")
        started = time.perf_counter()
        await rerank(reranker, request, pool, choice)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def main() -> None:
    count = 200
    corpus = data.build(ENTRIES, count)
    with tempfile.TemporaryDirectory(prefix="pc-rerank-") as tmp:
        db = Path(tmp) / "memory.db"
        await search_latency.ingest(db, corpus.texts, corpus.embedder())
        plain, plain_pool = await latencies(db, corpus, None, count)
        reranked, pool = await latencies(db, corpus, InstantReranker(), count)
        alone = await stage_alone(db, corpus, count)
    without, with_ = data.percentiles(plain), data.percentiles(reranked)
    result: dict[str, Any] = {
        "benchmark": "rerank_overhead",
        "entries": ENTRIES,
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
    data.RESULTS.mkdir(exist_ok=True)
    out = data.RESULTS / "rerank_overhead.json"
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
