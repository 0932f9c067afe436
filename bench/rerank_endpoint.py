"""The endpoint reranker's own overhead, the endpoint's time excluded.

A loopback fake `POST /rerank` endpoint (the test suite's, answering at once) and a pool of 30
candidate hits. Interleaved, the same number of times: the bare HTTP round trip (one httpx
client posting the same JSON body and decoding the JSON answer) and the adapter's whole
`rerank` call (text budget, request, status check, parsing, score selection, the decision).
The difference of the two is what the adapter adds to whatever the endpoint itself costs.

    python bench/rerank_endpoint.py [--calls 400]   # writes bench/results/rerank_endpoint.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from corpus import write_results  # noqa: E402

from powercontext.inference.rerank_endpoint import EndpointReranker, parse_scores  # noqa: E402
from powercontext.memory.models import (  # noqa: E402
    InferenceUsage,
    MemoryHit,
    MemoryRef,
    MemoryRerankDecision,
)
from powercontext.memory.rerank.listwise import cut_text  # noqa: E402
from powercontext.memory.rerank.scored import select_by_score  # noqa: E402
from powercontext.testing import FakeRerankEndpoint  # noqa: E402

CANDIDATES = 30
QUERY = "when did the billing service move to weekly deploys"


def pool() -> tuple[MemoryHit, ...]:
    ref = MemoryRef(scope_id="bench", revision=1)
    return tuple(
        MemoryHit(
            memory_ref=ref,
            entry_id=f"e{i}",
            entry_version_id=f"v{i}",
            kind="fact",
            text=f"note {i}: the billing service deploys {('weekly', 'daily', 'monthly')[i % 3]} "
            + "with a checklist of release steps " * 4,
            metadata={},
            score=1.0 / (i + 1),
            matched_by=("fts",),
        )
        for i in range(CANDIDATES)
    )


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(ordered[len(ordered) // 2], 4),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 4),
    }


async def measure(url: str, calls: int) -> dict[str, Any]:
    hits = pool()
    adapter = EndpointReranker(url, model="bench-model", api_key="bench-key")
    body = adapter._body(QUERY, [hit.text for hit in hits], 10)
    bare: list[float] = []
    full: list[float] = []
    async with httpx.AsyncClient(headers={"Authorization": "Bearer bench-key"}) as client:
        for i in range(calls + 20):  # the first 20 of each warm connections and code paths
            started = time.perf_counter()
            response = await client.post(url, json=body)
            response.raise_for_status()
            response.json()
            bare_ms = (time.perf_counter() - started) * 1000.0
            started = time.perf_counter()
            decision = await adapter.rerank(QUERY, hits, 10)
            full_ms = (time.perf_counter() - started) * 1000.0
            assert decision.selected_ranks
            if i >= 20:
                bare.append(bare_ms)
                full.append(full_ms)
    await adapter.aclose()
    bare_p, full_p = percentiles(bare), percentiles(full)
    return {
        "candidates": CANDIDATES,
        "calls": calls,
        "endpoint": "in-process threaded loopback fake, answers at once (word-overlap scores)",
        "bare_http_round_trip": bare_p,
        "adapter_rerank_call": full_p,
        "adapter_overhead": {
            "p50_ms": round(full_p["p50_ms"] - bare_p["p50_ms"], 4),
            "p95_ms": round(full_p["p95_ms"] - bare_p["p95_ms"], 4),
        },
        # Per-call pairs (adapter minus the bare call right before it): less sensitive to the
        # loopback's jitter than a difference of two percentiles, which can even go negative.
        "paired_overhead": percentiles([f - b for f, b in zip(full, bare, strict=True)]),
        "adapter_cpu_without_http": cpu_only(hits, calls),
    }


def cpu_only(hits: tuple[MemoryHit, ...], calls: int) -> dict[str, float]:
    """The adapter's own work around the request: text budget, body, parsing, selection."""
    adapter = EndpointReranker("http://127.0.0.1:1/rerank", model="bench-model")
    answer = {"results": [{"index": i, "relevance_score": 1.0 / (i + 1)} for i in range(len(hits))]}
    samples: list[float] = []
    for _ in range(calls):
        started = time.perf_counter()
        texts = [cut_text(hit.text, adapter.max_candidate_chars)[0] for hit in hits]
        json.dumps(adapter._body(QUERY, texts, 10))
        ranks = select_by_score(
            parse_scores(json.loads(json.dumps(answer))), len(hits), threshold=None, top_k=None
        )
        MemoryRerankDecision(selected_ranks=ranks, usage=InferenceUsage(requests=1))
        samples.append((time.perf_counter() - started) * 1000.0)
    return percentiles(samples)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    with FakeRerankEndpoint() as endpoint:
        figures = asyncio.run(measure(endpoint.url, args.calls))
    write_results("rerank_endpoint", figures)
