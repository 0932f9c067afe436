"""Latency the rerank cache saves on repeated LoCoMo questions.

One LoCoMo conversation (turn granularity, the hashing embedder, hybrid search) in a SQLite
file. The reranker is simulated: it sleeps a fixed latency (default 250 ms, about a small
hosted cross-encoder or a fast listwise LLM call) and then ranks the pool by word overlap, so
the decision is real work but the provider time is known. Three passes over the same
questions: without the cache (control), then with the cache cold (misses) and warm (hits).

    python bench/rerank_cache.py [--questions 40] [--latency-ms 250]
    # writes bench/results/rerank_cache.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from corpus import write_results

from powercontext import open_runtime
from powercontext.bench.locomo.dataset import load_dataset
from powercontext.bench.locomo.ingest import plan_ingest
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.memory import MemoryHit, MemoryRerankDecision, SearchMemoryRequest
from powercontext.memory.models import InferenceUsage

ROOT = Path(__file__).resolve().parent
DATASET = ROOT.parent.parent / "shared" / "data" / "locomo" / "locomo-dev.json"


class SimulatedReranker:
    """Sleeps `latency` seconds, then orders the pool by query-word overlap (stable)."""

    policy_id = "bench.simulated-overlap.v1"

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.calls = 0

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        self.calls += 1
        await asyncio.sleep(self.latency)
        words = set(query.lower().split())
        overlap = [len(words & set(h.text.lower().split())) for h in candidates]
        ranks = sorted(range(1, len(candidates) + 1), key=lambda r: -overlap[r - 1])
        return MemoryRerankDecision(
            selected_ranks=tuple(ranks[:limit]), usage=InferenceUsage(requests=1)
        )


def settings(db: Path, cache_ttl: float) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="hash"),
        runtime=RuntimeConfig(memory_rerank_cache_ttl_seconds=cache_ttl),
    )


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "count": len(ordered),
        "mean_ms": round(statistics.fmean(ordered), 3),
        "p50_ms": round(ordered[len(ordered) // 2], 3),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3),
    }


async def run_pass(memory: Any, questions: list[str]) -> tuple[list[float], int]:
    samples, hits = [], 0
    for question in questions:
        started = time.perf_counter()
        page = await memory.search(SearchMemoryRequest(query=question, limit=10))
        samples.append((time.perf_counter() - started) * 1000.0)
        hits += bool(page.rerank and page.rerank.cache_hit)
    return samples, hits


async def main(question_count: int, latency_ms: float) -> dict[str, Any]:
    dataset = load_dataset(DATASET)
    conversation = dataset.conversations[0]
    plan = plan_ingest(conversation, "turn")
    questions = [qa.question for qa in conversation.qa[:question_count]]
    results: dict[str, Any] = {
        "dataset": DATASET.name,
        "conversation": conversation.sample_id,
        "entries": len(plan.requests),
        "questions": len(questions),
        "simulated_provider_latency_ms": latency_ms,
        "search": "hybrid, hashing embedder, limit 10, 30 candidates, SQLite",
    }
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "locomo.db"
        for label, ttl in (("no_cache", 0.0), ("cache", 600.0)):
            reranker = SimulatedReranker(latency_ms / 1000.0)
            async with open_runtime(settings(db, ttl), memory_reranker=reranker) as runtime:
                memory = runtime.memory.for_scope(plan.scope_id)
                if await memory.head() is None:
                    await memory.remember_many(list(plan.requests))
                first, first_hits = await run_pass(memory, questions)
                second, second_hits = await run_pass(memory, questions)
            results[label] = {
                "first_pass": summary(first) | {"cache_hits": first_hits},
                "repeat_pass": summary(second) | {"cache_hits": second_hits},
                "provider_calls": reranker.calls,
            }
    control = results["no_cache"]["repeat_pass"]
    cached = results["cache"]["repeat_pass"]
    results["saved_per_repeated_query_ms"] = {
        "mean": round(control["mean_ms"] - cached["mean_ms"], 3),
        "p50": round(control["p50_ms"] - cached["p50_ms"], 3),
    }
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--latency-ms", type=float, default=250.0)
    args = parser.parse_args()
    figures = asyncio.run(main(args.questions, args.latency_ms))
    write_results("rerank_cache", figures)
