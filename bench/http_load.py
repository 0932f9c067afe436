"""HTTP search throughput: requests/s and latency percentiles at 1, 16 and 64 concurrent clients.

The server runs as its own process (`python -m powercontext.cli server run`, uvicorn, one
worker) on the embedded SQLite store seeded with `--entries` entries; the load comes from
httpx async clients in this process, in fts mode. Each level is bounded by `--requests` and
`--seconds`, whichever ends first; only 127.0.0.1 is contacted.

    python bench/http_load.py          # 10k entries; writes bench/results/http_load.json
    python bench/http_load.py --entries 2000 --seconds 3 --concurrency 1 16
    python bench/http_load.py --concurrency 1 --profile /tmp/server.prof   # where the CPU goes
    python bench/http_load.py --rounds 5 --baseline /tmp/old/src   # before/after, interleaved

Each fresh server first answers every query once (the `warm-up` level, reported apart): a
long-running server has built its per-row token sets and per-term BM25 weights long ago, and
a level that includes that first pass measures the server's start more than its steady
state. `--no-warm` measures from the first request, as before.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from powercontext import ServerSettings, __version__, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import RememberMemoryRequest

RESULTS = Path(__file__).resolve().parent / "results" / "http_load.json"
SCOPE = "bench"
WORDS_PER_ENTRY = 12


def _vocabulary(size: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def workload(seed: int) -> tuple[random.Random, list[str], list[str]]:
    """The generator (to seed the store with), the 2,000-word vocabulary and the 1,000
    queries of 1-3 words that every HTTP benchmark on this store uses."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(2000, rng)
    queries = [" ".join(rng.choices(vocabulary, k=rng.randint(1, 3))) for _ in range(1000)]
    return rng, vocabulary, queries


async def seed(db: Path, entries: int, vocabulary: list[str], rng: random.Random) -> float:
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
    )
    started = time.perf_counter()
    async with open_runtime(settings) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        for offset in range(0, entries, 5000):
            batch = [
                RememberMemoryRequest(text=" ".join(rng.choices(vocabulary, k=WORDS_PER_ENTRY)))
                for _ in range(min(5000, entries - offset))
            ]
            await memory.remember_many(batch)
    return time.perf_counter() - started


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# The event loop thread's own CPU time (thread_time): wall time would charge it with the waits
# for the GIL and the socket, and the search's worker threads are not profiled at all.
_PROFILED_SERVER = """
import cProfile, runpy, time
profiler = cProfile.Profile(time.thread_time)
profiler.enable()
try:
    runpy.run_module("powercontext.cli", run_name="__main__")
except (SystemExit, KeyboardInterrupt):
    pass
finally:
    profiler.disable()
    profiler.dump_stats({output!r})
"""


def start_server(
    db: Path,
    port: int,
    embedding_model: str = "none",
    profile: Path | None = None,
    pythonpath: str | None = None,
) -> subprocess.Popen[bytes]:
    """The server process; with `profile`, under cProfile, which writes its stats there when
    the server exits (SIGTERM: uvicorn shuts down cleanly); with `pythonpath`, importing
    powercontext from there (another checkout's src, to compare)."""
    env = os.environ | {
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{db}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": embedding_model,
        "POWERCONTEXT_SERVER_HTTP_HOST": "127.0.0.1",
        "POWERCONTEXT_SERVER_HTTP_PORT": str(port),
    }
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    command = ["-m", "powercontext.cli", "server", "run"]
    if profile is not None:
        command = ["-c", _PROFILED_SERVER.format(output=str(profile)), "server", "run"]
    return subprocess.Popen(
        [sys.executable, *command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def wait_ready(url: str, process: subprocess.Popen[bytes], within: float = 60) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(base_url=url) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}")
            try:
                if (await client.get("/v1/health", timeout=1)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError("the server did not become healthy in time")


def _process_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (Linux /proc), to split the cost between server and client."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(sorted_ms: list[float], q: float) -> float:
    if not sorted_ms:
        return float("nan")
    index = min(len(sorted_ms) - 1, max(0, round(q * (len(sorted_ms) - 1))))
    return sorted_ms[index]


async def load(
    url: str,
    concurrency: int,
    max_requests: int,
    seconds: float,
    queries: list[str],
    server_pid: int | None = None,
) -> dict[str, Any]:
    """`concurrency` clients, each its own httpx.AsyncClient with one keep-alive connection
    (one shared pool of many connections costs httpx far more CPU than the server spends)."""
    latencies: list[float] = []
    errors = 0
    issued = 0
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    clients = [
        httpx.AsyncClient(base_url=url, limits=limits, timeout=30) for _ in range(concurrency)
    ]

    async def one(client: httpx.AsyncClient, query: str) -> None:
        nonlocal errors
        started = time.perf_counter()
        response = await client.post(
            "/v1/memory/search",
            json={"scope_id": SCOPE, "query": query, "limit": 10, "mode": "fts"},
        )
        elapsed = (time.perf_counter() - started) * 1000.0
        if response.status_code == 200 and response.json()["mode"] == "fts":
            latencies.append(elapsed)
        else:
            errors += 1

    try:
        # Open the connections and warm the server outside the measurement.
        await asyncio.gather(*(one(c, queries[i]) for i, c in enumerate(clients)))
        latencies.clear()
        deadline = time.monotonic() + seconds

        async def worker(client: httpx.AsyncClient) -> None:
            nonlocal issued
            while issued < max_requests and time.monotonic() < deadline:
                issued += 1
                await one(client, queries[issued % len(queries)])

        server_cpu = _process_cpu_seconds(server_pid) if server_pid else None
        client_cpu = time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in clients))
        wall = time.perf_counter() - started
        client_cpu = time.process_time() - client_cpu
        if server_cpu is not None and server_pid:
            after = _process_cpu_seconds(server_pid)
            server_cpu = after - server_cpu if after is not None else None
    finally:
        for client in clients:
            await client.aclose()
    ordered = sorted(latencies)
    server_ms = _per_request(server_cpu, len(latencies))
    client_ms = _per_request(client_cpu, len(latencies))
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "errors": errors,
        "seconds": round(wall, 3),
        "requests_per_second": round(len(latencies) / wall, 1) if wall else 0.0,
        "p50_ms": round(_percentile(ordered, 0.50), 2),
        "p95_ms": round(_percentile(ordered, 0.95), 2),
        "p99_ms": round(_percentile(ordered, 0.99), 2),
        "mean_ms": round(statistics.fmean(ordered), 2) if ordered else None,
        "server_cpu_ms_per_request": server_ms,
        "client_cpu_ms_per_request": client_ms,
        # The client's work per request is the same code in every run, so this ratio moves
        # with the server's code and not with the shared machine's speed of the moment.
        "server_per_client_cpu": (
            round(server_ms / client_ms, 3) if server_ms is not None and client_ms else None
        ),
    }


def _per_request(cpu_seconds: float | None, requests: int) -> float | None:
    if cpu_seconds is None or not requests:
        return None
    return round(cpu_seconds * 1000.0 / requests, 2)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng, vocabulary, queries = workload(args.seed)
    with tempfile.TemporaryDirectory(prefix="pc-http-load-") as tmp:
        db = Path(tmp) / "load.db"
        seed_seconds = await seed(db, args.entries, vocabulary, rng)
        servers: dict[str, str | None] = {"this": None}
        if args.baseline is not None:
            servers = {"baseline": args.baseline, "this": None}
        runs: dict[str, list[list[dict[str, Any]]]] = {name: [] for name in servers}
        for round_ in range(args.rounds):
            for name, pythonpath in servers.items():  # interleaved: load drifts between rounds
                levels = await serve_levels(db, args, queries, pythonpath)
                for result in levels:
                    print(json.dumps({"server": name, "round": round_ + 1} | result), flush=True)
                runs[name].append(levels)
    report: dict[str, Any] = {
        "benchmark": "http_search_fts",
        "powercontext": __version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "entries": args.entries,
        "seed_seconds": round(seed_seconds, 2),
        "limit": 10,
        "mode": "fts",
        "server": "powercontext server run (uvicorn, 1 worker, access log on, SQLite)",
        "client": "one httpx.AsyncClient per concurrent client, one process, same machine",
        "load_average_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "http": _http_stack(),
        "rounds": args.rounds,
        "levels": _medians(runs["this"]),
    }
    if args.baseline is not None:
        report["baseline"] = {"pythonpath": args.baseline, "levels": _medians(runs["baseline"])}
    return report


async def serve_levels(
    db: Path, args: argparse.Namespace, queries: list[str], pythonpath: str | None
) -> list[dict[str, Any]]:
    """One server process (a fresh one per round), every concurrency level against it."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = start_server(db, port, profile=args.profile, pythonpath=pythonpath)
    try:
        await wait_ready(url, process)
        levels = []
        if args.warm:
            # A long-running server has read each row's terms and each term's BM25 weights
            # once; a fresh one does it during its first pass over the queries. That pass is
            # reported on its own (the cold figure), and the levels measure the server warm.
            warm = await load(url, 16, len(queries), 120.0, queries, process.pid)
            levels.append({"phase": "warm-up"} | warm)
        for concurrency in args.concurrency:
            level = await load(url, concurrency, args.requests, args.seconds, queries, process.pid)
            levels.append({"phase": "measured" if args.warm else "cold"} | level)
        return levels
    finally:
        # uvicorn re-raises the signal it shut down on; SIGINT ends in KeyboardInterrupt,
        # which lets cProfile write its stats, where SIGTERM's default action would not.
        process.send_signal(signal.SIGINT if args.profile else signal.SIGTERM)
        process.wait(timeout=30)


def _medians(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per level, the median of each figure over the rounds (the rounds' server CPU too)."""
    levels = []
    for runs in zip(*rounds, strict=True):
        level: dict[str, Any] = {}
        for key, value in runs[0].items():
            values = [run[key] for run in runs]
            numeric = isinstance(value, float | int) and None not in values
            if numeric and key != "concurrency":
                value = round(statistics.median(values), 3)
            level[key] = value
        if len(runs) > 1:
            level["server_cpu_ms_per_request_rounds"] = [
                run["server_cpu_ms_per_request"] for run in runs
            ]
        levels.append(level)
    return levels


def _http_stack() -> str:
    """The HTTP parser and event loop `server run` picks in this environment."""
    from powercontext.server.runner import _http_implementation, _loop_factory

    return f"{_http_implementation()} on {'asyncio' if _loop_factory() is None else 'uvloop'}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--requests", type=int, default=4000, help="per level, at most")
    parser.add_argument("--seconds", type=float, default=8.0, help="per level, at most")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--warm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="before the levels, send every query once (16 clients) and report that pass as "
        "the `warm-up` level; --no-warm measures the fresh server's first searches instead",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat every level on a fresh server; the report keeps each figure's median",
    )
    parser.add_argument(
        "--baseline",
        metavar="PYTHONPATH",
        default=None,
        help="also run a server importing powercontext from here (e.g. an older checkout's "
        "src), alternating with this one every round, and report it as `baseline`",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="run the server under cProfile and write its stats here (the CPU figures then "
        "include the profiler's overhead; read with `python -m pstats PATH`)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args()
    report = asyncio.run(main(arguments))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {arguments.output}")
