"""Server CPU per search request split in two: the Memory search itself and the HTTP layer.

In one process, on the 10k-entry store of bench/http_load.py: the same fts searches (limit 10)
go through the ASGI app (middleware, routing, auth dependency, body validation, handler,
response JSON) and straight to `ScopedMemory.search`, interleaved in rounds; the difference
of the CPU times (all threads) is the app's overhead. A third path runs the same search with
the store's worker-thread calls made on the loop instead (`search_inline`): the difference is
what handing each read to a thread and back costs. uvicorn's HTTP parsing and the sockets are
not in it: bench/http_load.py measures the whole server process.

    python bench/http_overhead.py      # writes bench/results/http_overhead.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import http_load

from powercontext import ServerSettings
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.server import translate
from powercontext.server.app import create_app
from powercontext.server.search_schemas import (
    SearchRequest,
)

RESULTS = Path(__file__).resolve().parent / "results" / "http_overhead.json"


def _scope(body: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/memory/search",
        "raw_path": b"/v1/memory/search",
        "query_string": b"",
        "root_path": "",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }


async def search_through(app: Any, query: str) -> None:
    """One fts search (limit 10) of the bench scope through the ASGI app, as a client sends
    it; raises unless it answers 200."""
    payload = {"scope_id": http_load.SCOPE, "query": query, "limit": 10, "mode": "fts"}
    body = json.dumps(payload).encode()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope(body), receive, send)
    if sent[0]["status"] != 200:
        raise RuntimeError(f"search answered {sent[0]['status']}")


@contextlib.contextmanager
def _hops_inlined() -> Iterator[None]:
    """The store's `asyncio.to_thread` calls run on the loop: the search's own CPU, without
    the handing over to worker threads and back (what a search costs besides its work)."""

    async def call(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    original = asyncio.to_thread
    asyncio.to_thread = call  # type: ignore[assignment]
    try:
        yield
    finally:
        asyncio.to_thread = original


async def measure(db: Path, queries: list[str], per_round: int, rounds: int) -> dict[str, Any]:
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        state = app.state.powercontext
        assert state.runtime is not None
        memory = state.runtime.memory.for_scope(http_load.SCOPE)

        async def through_app(query: str) -> None:
            await search_through(app, query)

        async def search_only(query: str) -> None:
            body = SearchRequest(scope_id=http_load.SCOPE, query=query, limit=10, mode="fts")
            await memory.search(translate.search_request(body))

        paths: dict[str, Callable[[str], Awaitable[None]]] = {
            "app": through_app,
            "search": search_only,
            "search_inline": search_only,  # run with the worker-thread hops inlined (below)
        }
        for query in queries[:200]:  # warm both paths and the caches
            await through_app(query)
        cpu_ms: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(rounds):
            for name, path in paths.items():
                with _hops_inlined() if name == "search_inline" else contextlib.nullcontext():
                    started = time.process_time()
                    for i in range(per_round):
                        await path(queries[i % len(queries)])
                    cpu_ms[name].append((time.process_time() - started) * 1000.0 / per_round)
    overheads = [a - s for a, s in zip(cpu_ms["app"], cpu_ms["search"], strict=True)]
    hops = [s - i for s, i in zip(cpu_ms["search"], cpu_ms["search_inline"], strict=True)]
    return {
        "app_cpu_ms_per_request": round(statistics.median(cpu_ms["app"]), 3),
        "search_cpu_ms_per_request": round(statistics.median(cpu_ms["search"]), 3),
        "app_overhead_cpu_ms_per_request": round(statistics.median(overheads), 3),
        "search_without_thread_hops_cpu_ms": round(statistics.median(cpu_ms["search_inline"]), 3),
        "thread_hops_cpu_ms_per_request": round(statistics.median(hops), 3),
        "rounds": {name: [round(v, 3) for v in values] for name, values in cpu_ms.items()},
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng, vocabulary, queries = http_load.workload(args.seed)
    with tempfile.TemporaryDirectory(prefix="pc-http-overhead-") as tmp:
        db = Path(tmp) / "load.db"
        await http_load.seed(db, args.entries, vocabulary, rng)
        result = await measure(db, queries, args.per_round, args.rounds)
    print(json.dumps({k: v for k, v in result.items() if k != "rounds"}), flush=True)
    return {
        "benchmark": "http_overhead_fts",
        "entries": args.entries,
        "per_round": args.per_round,
        "rounds_count": args.rounds,
    } | result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--per-round", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args()
    report = asyncio.run(main(arguments))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {arguments.output}")
