"""Batch search against sequential single searches over HTTP, at 100k entries.

One server process (`powercontext server run`, uvicorn, one worker, SQLite) with the local
MiniLM embedder; `--queries` (32) synthetic queries in `auto` mode (hybrid: every entry has
a vector), no reranker. Each round times, in one client and one run:

- `sequential`: the queries as that many `POST /v1/memory/search` calls, one after another;
- `batch`: the same queries as one `POST /v1/memory/search/batch`.

Wall time is measured in the client; server CPU is utime + stime of the server process
(/proc) across the phase. The bulk is ingested before the server starts, in-process, with
the benchmark corpus's precomputed vectors stored under the MiniLM profile id (embedding
100k texts with MiniLM on two shared cores takes too long): the vector channel's cost does
not depend on what the stored vectors mean. The queries are embedded by MiniLM in the
server, as in production: one model call per single search, one for the whole batch.

    python bench/batch_search.py                     # 100k entries, 32 queries, 3 rounds
    python bench/batch_search.py --entries 5000 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data
from http_load import _free_port, _process_cpu_seconds, start_server, wait_ready

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.inference.embeddings.local import LocalMiniLM
from powercontext.memory import RememberMemoryRequest
from powercontext.memory.models import EmbeddingProfile

SCOPE = "bench"
BATCH = 5_000
EMBEDDING_MODEL = "local:all-minilm-l6-v2"


class _StoredVectors:
    """Hands the corpus's precomputed vectors out under the MiniLM profile (see module doc)."""

    def __init__(self, profile: EmbeddingProfile, texts: Sequence[str], vectors: Any) -> None:
        self.profile = profile
        self._vectors = dict(zip(texts, vectors, strict=True))

    async def embed_documents(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        return [self._vectors[t] for t in texts]

    async def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        raise AssertionError("the ingest never embeds a query")

    async def embed_queries(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        raise AssertionError("the ingest never embeds a query")


async def ingest(db: Path, texts: list[str], profile: EmbeddingProfile) -> float:
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
    )
    embedder = _StoredVectors(profile, texts, data.embed(texts))
    started = time.perf_counter()
    async with open_runtime(settings, embedding_model=embedder) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        for offset in range(0, len(texts), BATCH):
            chunk = texts[offset : offset + BATCH]
            result = await memory.remember_many([RememberMemoryRequest(text=t) for t in chunk])
            assert result.vectors_pending == 0
    return time.perf_counter() - started


async def _phase(
    client: httpx.AsyncClient, pid: int, queries: list[str], batched: bool
) -> dict[str, float]:
    cpu_before = _process_cpu_seconds(pid) or 0.0
    started = time.perf_counter()
    if batched:
        searches = [{"query": q, "limit": 10} for q in queries]
        reply = await client.post(
            "/v1/memory/search/batch", json={"scope_id": SCOPE, "searches": searches}
        )
        reply.raise_for_status()
        pages = reply.json()["pages"]
        assert len({str(p["memory_ref"]) for p in pages}) == 1
    else:
        pages = []
        for query in queries:
            reply = await client.post(
                "/v1/memory/search", json={"scope_id": SCOPE, "query": query, "limit": 10}
            )
            reply.raise_for_status()
            pages.append(reply.json())
    wall = time.perf_counter() - started
    cpu = (_process_cpu_seconds(pid) or 0.0) - cpu_before
    assert all(p["mode"] == "hybrid" for p in pages), {p["mode"] for p in pages}
    return {"wall_ms": wall * 1000, "server_cpu_ms": cpu * 1000}


async def measure(url: str, pid: int, queries: list[str], rounds: int) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        await _phase(client, pid, queries[:4], batched=True)  # loads the model; not timed
        samples: dict[str, list[dict[str, float]]] = {"sequential": [], "batch": []}
        for _ in range(rounds):
            samples["sequential"].append(await _phase(client, pid, queries, batched=False))
            samples["batch"].append(await _phase(client, pid, queries, batched=True))
    figures: dict[str, Any] = {"rounds": samples}
    for name in ("sequential", "batch"):
        figures[name] = {
            key: round(statistics.median(s[key] for s in samples[name]), 1)
            for key in ("wall_ms", "server_cpu_ms")
        }
    seq, batch = figures["sequential"], figures["batch"]
    figures["ratio_sequential_over_batch"] = {
        "wall": round(seq["wall_ms"] / batch["wall_ms"], 2),
        "server_cpu": round(seq["server_cpu_ms"] / max(batch["server_cpu_ms"], 1e-9), 2),
    }
    return figures


async def main(args: argparse.Namespace) -> dict[str, Any]:
    profile = LocalMiniLM().profile
    texts = data.texts(args.entries)
    queries = data.queries(texts, args.queries)
    with tempfile.TemporaryDirectory(prefix="pc-batch-") as tmp:
        db = Path(tmp) / "bench.db"
        ingest_s = await ingest(db, texts, profile)
        port = _free_port()
        server = start_server(db, port, EMBEDDING_MODEL)
        try:
            url = f"http://127.0.0.1:{port}"
            await wait_ready(url, server, within=120)
            figures = await measure(url, server.pid, queries, args.rounds)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return {
        "entries": args.entries,
        "queries": args.queries,
        "embedding_model": EMBEDDING_MODEL,
        "mode": "auto (hybrid)",
        "ingest_seconds": round(ingest_s, 1),
        **figures,
        "machine": data.machine(),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args(argv)


if __name__ == "__main__":
    data.write_results("batch_search", asyncio.run(main(parse_args())))
