"""Contract: a scope exported to JSON lines and imported into another keeps its entries, on
every backend: entry ids, kinds, metadata, threads and event times, in write order."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from powercontext.memory.errors import (
    MemoryValidationError,
    NotFoundError,
    PayloadTooLargeError,
    RevisionConflictError,
)
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.memory.transfer import FORMAT, MAX_LINE_BYTES, NewEntry, import_lines

WHEN = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)


async def _seed(memory: ScopedMemory) -> None:
    await memory.remember_many(
        [
            RememberMemoryRequest(
                kind="message",
                text=f"turn {i} of the launch chat",
                metadata={"speaker": "ana" if i % 2 else "bo", "n": i},
                thread="chat-1",
                occurred_at=WHEN.replace(minute=i),
            )
            for i in range(5)
        ]
    )
    await memory.remember(RememberMemoryRequest(kind="fact", text="the deploy runs on fridays"))
    doomed = await memory.remember(RememberMemoryRequest(text="retired before export"))
    await memory.retire(RetireMemoryRequest(citation=doomed.entries[0].citation))


async def _export(memory: ScopedMemory, revision: int | None = None) -> list[str]:
    export = await memory.export(revision=revision)
    return [line async for line in export.lines()]


def _comparable(entries: object) -> list[tuple[object, ...]]:
    return [
        (e.entry_id, e.kind, e.text, e.metadata, e.thread, e.occurred_at)  # type: ignore[attr-defined]
        for e in entries  # type: ignore[attr-defined]
    ]


async def test_round_trip_keeps_ids_kinds_metadata_threads_and_times(store: MemoryStore) -> None:
    service = MemoryService(store)
    source, target = service.for_scope("src"), service.for_scope("dst")
    await _seed(source)
    lines = await _export(source)

    header = json.loads(lines[0])
    assert header["format"] == FORMAT and header["version"] == 1
    assert header["scope_id"] == "src" and header["entry_count"] == 6
    assert len(lines) == 7, "the retired entry is not exported"

    ticks: list[tuple[int, int | None]] = []
    result = await target.import_lines(lines, progress=lambda d, t: ticks.append((d, t)))
    assert (result.added, result.replaced, result.skipped, result.revisions) == (6, 0, 0, 1)
    assert ticks == [(6, 6)]

    before = (await source.list()).entries
    after = (await target.list()).entries
    assert _comparable(after) == _comparable(before), "same entries, same write order"
    assert all(e.occurred_at is not None for e in after)
    assert {e.entry_version_id for e in after}.isdisjoint(e.entry_version_id for e in before)
    hits = await target.search(SearchMemoryRequest(query="deploy fridays", mode="fts"))
    assert hits.hits[0].entry_id == before[5].entry_id, "imported entries are indexed"
    assert (await target.get_entry(before[0].entry_id)).thread == "chat-1"


async def test_export_at_a_revision_and_of_an_unknown_scope(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope("src")
    await _seed(memory)
    lines = await _export(memory, revision=1)
    assert json.loads(lines[0])["revision"] == 1 and len(lines) == 6
    with pytest.raises(NotFoundError):
        await memory.export(revision=99)
    with pytest.raises(NotFoundError):
        await MemoryService(store).for_scope("nothing").export()


async def test_on_existing_skip_replace_and_fail(store: MemoryStore) -> None:
    service = MemoryService(store)
    source, target = service.for_scope("src"), service.for_scope("dst")
    await _seed(source)
    lines = await _export(source)
    await target.import_lines(lines)
    head = (await target.head()) or pytest.fail("no head")

    with pytest.raises(RevisionConflictError, match="exist") as refused:
        await target.import_lines(lines)
    assert "'skip' leaves them out, 'replace'" in str(refused.value)  # the way out
    assert await target.head() == head, "a refused import writes nothing"

    skipped = await target.import_lines(lines, on_existing="skip")
    assert (skipped.added, skipped.skipped, skipped.revisions) == (0, 6, 0)
    assert skipped.memory_ref == head

    entry_id = json.loads(lines[1])["entry_id"]
    one = json.dumps({**json.loads(lines[0]), "entry_count": 1})  # the header counts lines
    changed = [one, json.dumps({**json.loads(lines[1]), "text": "turn 0, corrected"})]
    replaced = await target.import_lines(changed, on_existing="replace")
    assert (replaced.added, replaced.replaced) == (0, 1)
    current = await target.get_entry(entry_id)
    assert (current.text, current.version) == ("turn 0, corrected", 2)


async def test_replace_reactivates_a_retired_entry(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope("dst")
    written, _ = await memory.add_entries([NewEntry(entry_id="e-1", text="first words")])
    assert written is not None
    await memory.retire(RetireMemoryRequest(citation=written.entries[0].citation))
    again, counts = await memory.add_entries(
        [NewEntry(entry_id="e-1", text="second words")], on_existing="replace"
    )
    assert again is not None and counts.replaced == 1
    entry = await memory.get_entry("e-1")
    assert (entry.text, entry.version, entry.active) == ("second words", 2, True)


async def test_import_writes_one_revision_per_batch(store: MemoryStore) -> None:
    service = MemoryService(store)
    header = json.dumps(
        {"format": FORMAT, "version": 1, "scope_id": "x", "revision": 1, "entry_count": 5}
        | {"exported_at": WHEN.isoformat()}
    )
    lines = [header] + [json.dumps({"entry_id": f"id-{i}", "text": f"note {i}"}) for i in range(5)]
    ticks: list[int] = []
    result = await import_lines(
        service, "dst", lines, batch_entries=2, progress=lambda d, _t: ticks.append(d)
    )
    assert result.revisions == 3 and ticks == [2, 4, 5]
    assert result.memory_ref is not None and result.memory_ref.revision == 3


@pytest.mark.parametrize(
    ("lines", "error", "message"),
    [
        ([], MemoryValidationError, "header"),
        (['{"entry_id": "a", "text": "b"}'], MemoryValidationError, "header"),
        (['{"format": "powercontext.memory.export", "version": 9}'], MemoryValidationError, "9"),
        (["HEADER", "not json"], MemoryValidationError, "line 2"),
        (["HEADER", '{"entry_id": "a", "text": "b", "colour": 1}'], MemoryValidationError, "2"),
        (["HEADER", '{"entry_id": " a", "text": "b"}'], MemoryValidationError, "line 2"),
        (
            ["HEADER", json.dumps({"entry_id": "a", "text": "x" * MAX_LINE_BYTES})],
            PayloadTooLargeError,
            "line 2",
        ),
    ],
)
async def test_import_refuses_bad_input_naming_the_line(
    store: MemoryStore, lines: list[str], error: type[Exception], message: str
) -> None:
    header = json.dumps(
        {"format": FORMAT, "version": 1, "scope_id": "x", "revision": 1, "entry_count": 1}
        | {"exported_at": WHEN.isoformat()}
    )
    memory = MemoryService(store).for_scope("dst")
    with pytest.raises(error, match=message):
        await memory.import_lines([header if line == "HEADER" else line for line in lines])
    assert await memory.head() is None


async def test_duplicate_ids_in_one_batch_are_refused(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope("dst")
    twice = [NewEntry(entry_id="same", text="a"), NewEntry(entry_id="same", text="b")]
    with pytest.raises(MemoryValidationError, match="twice"):
        await memory.add_entries(twice)


async def test_add_entries_keeps_the_batch_bound(store: MemoryStore) -> None:
    service = MemoryService(store, config=SearchConfig(max_batch_entries=2))
    three = [NewEntry(entry_id=f"e{i}", text=f"note {i}") for i in range(3)]
    with pytest.raises(PayloadTooLargeError, match="MAX_BATCH_ENTRIES"):
        await service.add_entries("dst", three)
    header = json.dumps(
        {"format": FORMAT, "version": 1, "scope_id": "x", "revision": 1, "entry_count": 3}
        | {"exported_at": WHEN.isoformat()}
    )
    lines = [header] + [e.model_dump_json() for e in three]
    result = await service.for_scope("dst").import_lines(lines)
    assert (result.added, result.revisions) == (3, 2), "imports batch within the bound"
