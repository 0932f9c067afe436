"""Two OS processes, each with its own PostgresMemoryStore, race commits on one PostgreSQL.

The compare-and-swap lives in the database (the scope row's UPDATE ... WHERE head_revision =
expected), so no in-process lock can be what keeps it correct here.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue
import time
from pathlib import Path
from typing import Any

import pytest

from powercontext.memory.errors import RevisionConflictError
from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.ports import CommitRequest, NewVersion, PlannedChange
from tests import pg_server

pytestmark = pytest.mark.postgres

ROUNDS = 12
ATTEMPTS = 20
NOTES = 15
TIMEOUT = 120


def _add(writer: str, n: int) -> PlannedChange:
    return PlannedChange(
        op="add",
        new=NewVersion(
            entry_id=f"{writer}-{n}",
            entry_version_id=f"{writer}-{n}-v1",
            version=1,
            kind="fact",
            text=f"{writer} wrote note {n}",
            metadata={"writer": writer},
            index_tokens=f"{writer.lower()} wrote note {n}",
        ),
    )


async def _open(url: str) -> Any:
    from powercontext.storage.postgres import PostgresMemoryStore

    return await PostgresMemoryStore.open(url)


async def _rounds(url: str, writer: str, barrier: Any, results: Any) -> None:
    """Each round both processes commit on the same expected head at the same moment."""
    store = await _open(url)
    try:
        for step in range(ROUNDS):
            await asyncio.to_thread(barrier.wait, TIMEOUT)
            try:
                done = await store.commit(
                    CommitRequest("rounds", step or None, [_add(writer, step)])
                )
                results.put((step, writer, "won", done.revision))
            except RevisionConflictError as exc:
                results.put((step, writer, "lost", exc.actual))
            await asyncio.to_thread(barrier.wait, TIMEOUT)
    finally:
        await store.close()


async def _free(url: str, writer: str, barrier: Any, results: Any) -> None:
    """Read the head, commit on it, as fast as possible; losses are expected."""
    store = await _open(url)
    try:
        await asyncio.to_thread(barrier.wait, TIMEOUT)
        for attempt in range(ATTEMPTS):
            head = await store.head("free")
            try:
                done = await store.commit(CommitRequest("free", head, [_add(writer, attempt)]))
                results.put((attempt, writer, "won", done.revision))
            except RevisionConflictError:
                results.put((attempt, writer, "lost", None))
    finally:
        await store.close()


async def _retire_same(url: str, writer: str, barrier: Any, results: Any) -> None:
    """Both retire one entry, each on a fresh head: the second must find it gone."""
    store = await _open(url)
    try:
        current = await store.latest_version("retire", "target")
        await asyncio.to_thread(barrier.wait, TIMEOUT)
        change = PlannedChange(op="retire", previous_entry_version_id=current.entry_version_id)
        for _ in range(5):  # a lost head race is retried; a lost entry race is final
            head = await store.head("retire")
            try:
                done = await store.commit(CommitRequest("retire", head, [change]))
                results.put((0, writer, "won", done.revision))
                return
            except RevisionConflictError as exc:
                if exc.actual is None or exc.actual == head:  # the version itself was gone
                    results.put((0, writer, "lost", head))
                    return
        results.put((0, writer, "gave up", None))
    finally:
        await store.close()


async def _service(url: str, writer: str, barrier: Any, results: Any) -> None:
    """Two MemoryService instances, as two server processes would run them."""
    from powercontext.memory.service import MemoryService

    store = await _open(url)
    service = MemoryService(store)
    try:
        await asyncio.to_thread(barrier.wait, TIMEOUT)
        for n in range(NOTES):
            request = RememberMemoryRequest(kind="fact", text=f"{writer} remembers {n}")
            while True:  # what a client does on 409: try again
                try:
                    done = await service.remember_many("service", [request])
                    break
                except RevisionConflictError:
                    continue
            results.put((n, writer, "won", done.memory_ref.revision))
    finally:
        await store.close()


def run_writer(name: str, url: str, writer: str, barrier: Any, results: Any) -> None:
    work = {"rounds": _rounds, "free": _free, "retire": _retire_same, "service": _service}
    asyncio.run(work[name](url, writer, barrier, results))


def _race(name: str, url: str, expected: int) -> list[tuple[Any, ...]]:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    workers = [
        ctx.Process(target=run_writer, args=(name, url, writer, barrier, results))
        for writer in ("A", "B")
    ]
    for worker in workers:
        worker.start()
    collected: list[tuple[Any, ...]] = []
    deadline = time.monotonic() + TIMEOUT
    while len(collected) < expected and time.monotonic() < deadline:
        try:
            collected.append(results.get(timeout=0.5))
        except queue.Empty:
            if not any(worker.is_alive() for worker in workers):
                break
    for worker in workers:
        worker.join(TIMEOUT)
        assert worker.exitcode == 0, f"writer process {worker.pid} failed"
    assert len(collected) == expected, collected
    return collected


@pytest.fixture
async def url(tmp_path: Path) -> str:
    database = await pg_server.database_url(tmp_path)
    store = await _open(database)  # migrate once, before two processes race to
    await store.close()
    return database


async def _history(url: str, scope: str) -> tuple[int | None, list[Any]]:
    store = await _open(url)
    try:
        return await store.head(scope), await store.changes(scope, 0, limit=10_000)
    finally:
        await store.close()


async def test_exactly_one_process_wins_each_round(url: str) -> None:
    outcomes = await asyncio.to_thread(_race, "rounds", url, 2 * ROUNDS)
    winners = {}
    for step in range(ROUNDS):
        this_round = sorted((o[2], o[1], o[3]) for o in outcomes if o[0] == step)
        assert [o[0] for o in this_round] == ["lost", "won"], this_round
        assert this_round[1][2] == step + 1
        assert this_round[0][2] == step + 1  # the loser is told the winner's head
        winners[step] = this_round[1][1]
    head, changes = await _history(url, "rounds")
    assert head == ROUNDS
    assert [(c.revision, c.entry_id) for c in changes] == [
        (step + 1, f"{winners[step]}-{step}") for step in range(ROUNDS)
    ]


async def test_free_racing_loses_no_revision_and_hands_none_out_twice(url: str) -> None:
    outcomes = await asyncio.to_thread(_race, "free", url, 2 * ATTEMPTS)
    wins = [o for o in outcomes if o[2] == "won"]
    assert sorted(o[3] for o in wins) == list(range(1, len(wins) + 1))
    head, changes = await _history(url, "free")
    assert head == len(wins)
    assert [c.revision for c in changes] == list(range(1, len(wins) + 1))
    assert sorted(c.entry_id for c in changes) == sorted(f"{o[1]}-{o[0]}" for o in wins)


async def test_only_one_process_retires_an_entry(url: str) -> None:
    store = await _open(url)
    try:
        await store.commit(CommitRequest("retire", None, [_add("seed", 0)]))
        target = PlannedChange(
            op="add",
            new=NewVersion(
                entry_id="target",
                entry_version_id="target-v1",
                version=1,
                kind="fact",
                text="retire me",
                metadata={},
                index_tokens="retir me",
            ),
        )
        await store.commit(CommitRequest("retire", 1, [target]))
    finally:
        await store.close()
    outcomes = await asyncio.to_thread(_race, "retire", url, 2)
    assert sorted(o[2] for o in outcomes) == ["lost", "won"], outcomes
    head, changes = await _history(url, "retire")
    assert head == 3
    assert [(c.op, c.entry_id) for c in changes] == [
        ("add", "seed-0"),
        ("add", "target"),
        ("retire", "target"),
    ]


async def test_two_memory_services_keep_every_write(url: str) -> None:
    outcomes = await asyncio.to_thread(_race, "service", url, 2 * NOTES)
    assert sorted(o[3] for o in outcomes) == list(range(1, 2 * NOTES + 1))
    head, changes = await _history(url, "service")
    assert head == 2 * NOTES
    assert len(changes) == 2 * NOTES and len({c.entry_id for c in changes}) == 2 * NOTES
