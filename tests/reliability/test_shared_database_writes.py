"""Two writers sharing one database (issue 19, item 4).

A write without `expected_revision` means "commit at whatever the head is": losing the CAS to
another process is no reason to fail it, however many rounds in a row it loses. Each process
has its own in-process scope lock, so here two MemoryService instances on two connections to
one SQLite file stand for two server processes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from powercontext.memory import RememberMemoryRequest
from powercontext.memory import commit as commit_module
from powercontext.memory.errors import RevisionConflictError
from powercontext.memory.ports import CommitRequest, MemoryStore
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore

SCOPE = "shared-db"


class RivalFirstStore:
    """A real store where another writer commits just before each of the first `losses` CAS
    rounds, so each of those rounds is lost exactly as it is against another process."""

    def __init__(self, store: MemoryStore, rival: MemoryService, losses: int) -> None:
        self._store = store
        self._rival = rival
        self.losses = losses
        self.commits = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def commit(self, request: CommitRequest) -> Any:
        self.commits += 1
        if self.losses > 0:
            self.losses -= 1
            rival = self._rival.for_scope(request.scope_id)
            await rival.remember(RememberMemoryRequest(text=f"rival write {self.commits}"))
        return await self._store.commit(request)


async def test_a_write_without_expected_revision_outlasts_many_lost_rounds(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shared.db"
    async with await SqliteMemoryStore.open(db) as mine, await SqliteMemoryStore.open(db) as theirs:
        raced = RivalFirstStore(mine, MemoryService(theirs), losses=12)
        service = MemoryService(raced)  # type: ignore[arg-type]
        written = await service.for_scope(SCOPE).remember(RememberMemoryRequest(text="mine"))
        assert raced.commits == 13
        assert written.memory_ref.revision == 13  # after the rival's 12
        head = await theirs.head(SCOPE)
        assert head == 13


async def test_a_write_with_expected_revision_still_fails_at_once(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    async with await SqliteMemoryStore.open(db) as mine, await SqliteMemoryStore.open(db) as theirs:
        raced = RivalFirstStore(mine, MemoryService(theirs), losses=1)
        service = MemoryService(raced)  # type: ignore[arg-type]
        with pytest.raises(RevisionConflictError):
            await service.for_scope(SCOPE).remember(
                RememberMemoryRequest(text="mine", expected_revision=0)
            )
        assert raced.commits == 1


async def test_the_retry_is_bounded_by_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_module, "COMMIT_RETRY_SECONDS", 0.3)
    db = tmp_path / "shared.db"
    async with await SqliteMemoryStore.open(db) as mine, await SqliteMemoryStore.open(db) as theirs:
        raced = RivalFirstStore(mine, MemoryService(theirs), losses=10**9)
        service = MemoryService(raced)  # type: ignore[arg-type]
        with pytest.raises(RevisionConflictError, match="gave up after"):
            await asyncio.wait_for(
                service.for_scope(SCOPE).remember(RememberMemoryRequest(text="mine")), 10
            )
        assert raced.commits > 5


async def test_two_services_writing_concurrently_lose_nothing(tmp_path: Path) -> None:
    """Two 'processes' writing 100 entries each at once, no expected_revision: all commit."""
    db = tmp_path / "shared.db"
    async with await SqliteMemoryStore.open(db) as one, await SqliteMemoryStore.open(db) as two:
        writers = [MemoryService(one), MemoryService(two)]

        async def write(service: MemoryService, name: str) -> None:
            memory = service.for_scope(SCOPE)
            for i in range(100):
                await memory.remember(RememberMemoryRequest(text=f"{name} {i}"))

        await asyncio.gather(*(write(s, f"w{n}") for n, s in enumerate(writers)))
        assert await one.head(SCOPE) == 200


def test_two_processes_sharing_sqlite_lose_no_write(tmp_path: Path) -> None:
    """A reduced bench/shared_writers.py: two real processes, no expected_revision."""
    from tests.reliability.bench_scripts import load

    figures = load("shared_writers").run(
        f"sqlite:///{tmp_path / 'shared.db'}", processes=2, writes=60, tasks=4
    )
    assert figures["problems"] == [] and figures["writes_failed"] == {}
    assert figures["writes_acknowledged"] == figures["writes_attempted"] == 120
