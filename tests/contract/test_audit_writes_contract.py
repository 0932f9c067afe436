"""Contract: concurrent writers, idempotent replays across a restart and event times in any
offset get one answer from every backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.errors import IdempotencyConflictError, RevisionConflictError
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import RememberMemoryRequest, RetireMemoryRequest
from powercontext.memory.ports import CommitRequest, MemoryStore, VersionPage
from powercontext.memory.service import MemoryService

from .backends import Backend
from .builders import add

INDIA = timezone(timedelta(hours=5, minutes=30))


async def test_racing_commits_on_one_head_give_one_revision_and_alike_conflicts(
    store: MemoryStore,
) -> None:
    await store.commit(CommitRequest("race", None, [add("first")]))
    outcomes = await asyncio.gather(
        *(store.commit(CommitRequest("race", 1, [add(f"racer {i}")])) for i in range(6)),
        return_exceptions=True,
    )
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert [w.revision for w in won] == [2]
    assert all(isinstance(o, RevisionConflictError) for o in lost) and len(lost) == 5
    assert {(o.expected, o.actual, str(o)) for o in lost} == {  # type: ignore[attr-defined]
        (1, 2, "scope 'race' is at revision 2, expected 1")
    }
    assert await store.head("race") == 2
    assert [c.op for c in await store.changes("race", 0, limit=10)] == ["add", "add"]
    listed = await store.list_versions(VersionPage("race", 2, limit=10))
    assert len(listed) == 2
    # Writers without an expected revision all land, one revision each.
    memory = MemoryService(store).for_scope("race")
    free = await asyncio.gather(
        *(memory.remember(RememberMemoryRequest(text=f"free {i}")) for i in range(5))
    )
    assert sorted(w.memory_ref.revision for w in free) == [3, 4, 5, 6, 7]


async def test_a_keyed_write_replays_after_the_store_restarts(
    backend: Backend, tmp_path: Path
) -> None:
    if not backend.persistent:
        pytest.skip("this backend keeps nothing after close")
    first = await backend.open(tmp_path)
    memory = MemoryService(first, embedder=HashingEmbedder(dimension=32)).for_scope("keys")
    written = await memory.remember(RememberMemoryRequest(text="kept once", idempotency_key="k1"))
    batch = [RememberMemoryRequest(text=f"batch {i}", idempotency_key="k2") for i in range(2)]
    batch_written = await memory.remember_many(batch)
    retired = await memory.retire(
        RetireMemoryRequest(citation=written.entries[0].citation, idempotency_key="k3")
    )
    await first.close()

    again = await backend.open(tmp_path)
    try:
        memory = MemoryService(again, embedder=HashingEmbedder(dimension=32)).for_scope("keys")
        replay = await memory.remember(
            RememberMemoryRequest(text="kept once", idempotency_key="k1")
        )
        assert replay.memory_ref == written.memory_ref
        assert replay.citations == written.citations
        assert (await memory.remember_many(batch)).citations == batch_written.citations
        again_retired = await memory.retire(
            RetireMemoryRequest(citation=written.entries[0].citation, idempotency_key="k3")
        )
        assert again_retired.memory_ref == retired.memory_ref
        with pytest.raises(IdempotencyConflictError):
            await memory.remember(RememberMemoryRequest(text="other body", idempotency_key="k1"))
        assert await again.head("keys") == 3
    finally:
        await again.close()


async def test_an_event_time_in_another_offset_is_the_same_instant_in_utc(
    store: MemoryStore,
) -> None:
    # 12:00 in India is 06:30 UTC, before 07:00 UTC; as text "2025-01-01T12:00:00+05:30" sorts
    # after "2025-01-01T07:00:00+00:00".
    india = add("india", occurred_at=datetime(2025, 1, 1, 12, 0, tzinfo=INDIA))
    utc = add("utc", occurred_at=datetime(2025, 1, 1, 7, 0, tzinfo=UTC))
    result = await store.commit(CommitRequest("tz", None, [india, utc]))
    stored = await store.fetch_versions("tz", result.keys)
    times = [stored[key].occurred_at for key in result.keys]
    assert times == [datetime(2025, 1, 1, 6, 30, tzinfo=UTC), datetime(2025, 1, 1, 7, tzinfo=UTC)]
    after = MemoryFilter(occurred_after=datetime(2025, 1, 1, 6, 45, tzinfo=UTC))
    page = await store.list_versions(VersionPage("tz", 1, limit=10, where=after))
    assert [version.text for version in page] == ["utc"]
    assert all(t is not None and t.utcoffset() == timedelta(0) for t in times)


async def test_event_times_through_the_service_come_back_in_utc(store: MemoryStore) -> None:
    memory = MemoryService(store, embedder=HashingEmbedder(dimension=32)).for_scope("tz")
    moments = [
        datetime(2025, 1, 1, 12, 0, tzinfo=INDIA),
        datetime(2024, 12, 31, 22, 0, 0, 1, tzinfo=timezone(timedelta(hours=-8))),
        datetime(2025, 1, 1, 6, 30, tzinfo=timezone(timedelta(hours=14))),
        datetime(1, 1, 2, tzinfo=UTC),
        datetime(2025, 1, 1, 6, 30),  # naive: read as UTC
    ]
    await memory.remember_many(
        [RememberMemoryRequest(text=f"moment {i}", occurred_at=t) for i, t in enumerate(moments)]
    )
    entries = (await memory.list(limit=10)).entries
    assert [e.occurred_at for e in entries] == [
        datetime(2025, 1, 1, 6, 30, tzinfo=UTC),
        datetime(2025, 1, 1, 6, 0, 0, 1, tzinfo=UTC),
        datetime(2024, 12, 31, 16, 30, tzinfo=UTC),
        datetime(1, 1, 2, tzinfo=UTC),
        datetime(2025, 1, 1, 6, 30, tzinfo=UTC),
    ]
    assert [e.model_dump(mode="json")["occurred_at"] for e in entries] == [
        "2025-01-01T06:30:00Z",
        "2025-01-01T06:00:00.000001Z",
        "2024-12-31T16:30:00Z",
        "0001-01-02T00:00:00Z",
        "2025-01-01T06:30:00Z",
    ]
    window = MemoryFilter(
        occurred_after=datetime(2025, 1, 1, 6, 0, 0, 1, tzinfo=UTC),
        occurred_before=datetime(2025, 1, 1, 12, 0, 0, 1, tzinfo=INDIA),
    )
    inside = (await memory.list(where=window, limit=10)).entries
    assert [e.text for e in inside] == ["moment 0", "moment 1", "moment 4"]
