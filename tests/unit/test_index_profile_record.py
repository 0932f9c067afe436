"""Which writes record a scope's index profile: a scope indexed under the current profile is
never reported stale because of how its first record was reached, and a scope whose earlier
index is really unknown (or another profile's) still is."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore


class FlakyProfileStore(SqliteMemoryStore):
    """The first profile record fails (a dropped connection), later ones succeed."""

    failures = 1

    async def set_index_profile(self, scope_id: str, profile: str) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("database went away")
        await super().set_index_profile(scope_id, profile)


def _remember(text: str) -> RememberMemoryRequest:
    return RememberMemoryRequest(text=text)


async def test_a_first_write_recorded_late_is_not_reported_stale() -> None:
    """Two writers (two processes) on a new scope: the writer of revision 1 records after
    the writer of revision 2 has finished. Revision 2's writer must not claim the scope."""
    async with await SqliteMemoryStore.open(":memory:") as store:
        first, second = MemoryService(store), MemoryService(store)
        committed, release = asyncio.Event(), asyncio.Event()
        record_first = first.profiles.record

        async def slow_record(scope_id: str, revision: int) -> None:
            committed.set()  # record runs after the commit
            await release.wait()
            await record_first(scope_id, revision)

        first.profiles.record = slow_record  # type: ignore[method-assign]
        writing = asyncio.create_task(first.for_scope("s").remember(_remember("one")))
        await committed.wait()
        result = await second.for_scope("s").remember(_remember("two"))
        assert result.memory_ref.revision == 2
        release.set()
        await writing
        for service in (first, second):
            assert not await service.profiles.is_stale("s")
            assert await service.profiles.stale_scopes() == []


async def test_a_failed_first_record_is_retried_by_the_next_write() -> None:
    store = await FlakyProfileStore.open(":memory:")
    async with store:
        service = MemoryService(store)
        memory = service.for_scope("s")
        await memory.remember(_remember("one"))  # the write stands, its record failed
        assert await store.index_profile("s") is None
        await memory.remember(_remember("two"))
        assert await store.index_profile("s") == service.profiles.current
        assert not await service.profiles.is_stale("s")


async def test_a_scope_written_before_profiles_stays_stale_until_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    async with await SqliteMemoryStore.open(db) as store:
        await MemoryService(store).for_scope("old").remember(_remember("one"))
    with sqlite3.connect(db) as conn:  # as a database from before profiles were recorded
        conn.execute("DELETE FROM scope_index_profiles")
    async with await SqliteMemoryStore.open(db) as store:
        service = MemoryService(store)
        memory = service.for_scope("old")
        await memory.remember(_remember("two"))  # a later write cannot vouch for revision 1
        assert await service.profiles.is_stale("old")
        assert await service.profiles.stale_scopes() == ["old"]
        await service.rebuild("old")
        assert not await service.profiles.is_stale("old")
        assert await service.profiles.stale_scopes() == []


async def test_a_scope_indexed_under_another_profile_stays_stale_after_writes() -> None:
    async with await SqliteMemoryStore.open(":memory:") as store:
        await MemoryService(store).for_scope("s").remember(_remember("one"))
        other = SearchConfig(index=IndexTextConfig(template="{kind}: {text}"))
        service = MemoryService(store, config=other)
        assert await service.profiles.is_stale("s")
        await service.for_scope("s").remember(_remember("two"))
        assert await service.profiles.is_stale("s")
        assert await service.profiles.stale_scopes() == ["s"]
