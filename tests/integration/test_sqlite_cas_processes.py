"""Two OS processes commit to one SQLite file: the head's compare-and-swap holds across them."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue
import time
from pathlib import Path
from typing import Any

from powercontext.memory.errors import RevisionConflictError
from powercontext.memory.ports import CommitRequest, NewVersion, PlannedChange
from powercontext.storage.sqlite import SqliteMemoryStore

ROUNDS = 15
ATTEMPTS = 25
TIMEOUT = 120


def _change(writer: str, n: int) -> PlannedChange:
    return PlannedChange(
        op="add",
        new=NewVersion(
            entry_id=f"{writer}-{n}",
            entry_version_id=f"{writer}-{n}-v1",
            version=1,
            kind="fact",
            text=f"written by {writer} in step {n}",
            metadata={"writer": writer},
            index_tokens=f"written by {writer} step {n}",
        ),
    )


async def _lockstep(path: str, writer: str, barrier: Any, results: Any) -> None:
    store = await SqliteMemoryStore.open(path)
    try:
        for step in range(ROUNDS):
            # Both processes hold the same expected head before either commits.
            await asyncio.to_thread(barrier.wait, TIMEOUT)
            try:
                result = await store.commit(
                    CommitRequest("race", step or None, [_change(writer, step)])
                )
                results.put((step, writer, "won", result.revision))
            except RevisionConflictError as exc:
                results.put((step, writer, "lost", exc.actual))
            await asyncio.to_thread(barrier.wait, TIMEOUT)
    finally:
        await store.close()


def lockstep_writer(path: str, writer: str, barrier: Any, results: Any) -> None:
    asyncio.run(_lockstep(path, writer, barrier, results))


async def _free_for_all(path: str, writer: str, barrier: Any, results: Any) -> None:
    store = await SqliteMemoryStore.open(path)
    try:
        await asyncio.to_thread(barrier.wait, TIMEOUT)
        for attempt in range(ATTEMPTS):
            head = await store.head("free")
            try:
                result = await store.commit(CommitRequest("free", head, [_change(writer, attempt)]))
                results.put((attempt, writer, "won", result.revision))
            except RevisionConflictError:
                results.put((attempt, writer, "lost", None))
    finally:
        await store.close()


def free_for_all_writer(path: str, writer: str, barrier: Any, results: Any) -> None:
    asyncio.run(_free_for_all(path, writer, barrier, results))


def _run(target: Any, path: Path, expected_results: int) -> list[tuple[Any, ...]]:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    workers = [
        ctx.Process(target=target, args=(str(path), name, barrier, results)) for name in "AB"
    ]
    for worker in workers:
        worker.start()
    collected: list[tuple[Any, ...]] = []
    deadline = time.monotonic() + TIMEOUT
    while len(collected) < expected_results and time.monotonic() < deadline:
        try:
            collected.append(results.get(timeout=0.5))
        except queue.Empty:
            if not any(worker.is_alive() for worker in workers):
                break
    for worker in workers:
        worker.join(TIMEOUT)
        assert worker.exitcode == 0, f"writer {worker.name} failed"
    assert len(collected) == expected_results
    return collected


async def _committed(path: Path, scope: str) -> tuple[int | None, list[Any]]:
    store = await SqliteMemoryStore.open(path)
    try:
        return await store.head(scope), await store.changes(scope, 0, limit=10_000)
    finally:
        await store.close()


async def test_exactly_one_process_wins_each_round(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "memory.sqlite3"
    outcomes = await asyncio.to_thread(_run, lockstep_writer, path, 2 * ROUNDS)
    for step in range(ROUNDS):
        this_round = sorted((o[2], o[1], o[3]) for o in outcomes if o[0] == step)
        (won, lost) = this_round[1], this_round[0]
        assert [won[0], lost[0]] == ["won", "lost"], this_round
        assert won[2] == step + 1
        assert lost[2] == step + 1  # the loser saw the winner's revision as the head
    head, changes = await _committed(path, "race")
    assert head == ROUNDS
    assert [c.revision for c in changes] == list(range(1, ROUNDS + 1))
    winners = {o[0]: o[1] for o in outcomes if o[2] == "won"}
    assert [c.entry_id for c in changes] == [f"{winners[s]}-{s}" for s in range(ROUNDS)]


async def test_racing_writers_lose_no_revision_and_duplicate_none(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    outcomes = await asyncio.to_thread(_run, free_for_all_writer, path, 2 * ATTEMPTS)
    wins = [o for o in outcomes if o[2] == "won"]
    revisions = sorted(o[3] for o in wins)
    assert revisions == list(range(1, len(wins) + 1))  # no revision lost or handed out twice
    head, changes = await _committed(path, "free")
    assert head == len(wins)
    assert sorted(c.entry_id for c in changes) == sorted(f"{o[1]}-{o[0]}" for o in wins)
    assert [c.revision for c in changes] == list(range(1, len(wins) + 1))
