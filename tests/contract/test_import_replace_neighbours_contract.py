"""Contract: an import indexes its entries as a rebuild would, replacing ones included.

With contextual indexing a thread entry's tokens and vector hold its neighbours' words. An
import with `on_existing="replace"` writes a new version of an existing entry: that version
is indexed alone (a rebuild indexes a thread entry's later version alone), and the replaced
one leaves its neighbours' index, as after a revise. Entries new to the scope join their
thread's sequence and widen the neighbours before them, as a turn-by-turn write does. After
an import every search (each mode, at the head and as of earlier revisions, scores included)
must answer what it answers after `reindex --rebuild`; the rebuild is the reference.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import (
    MemoryEntry,
    RememberMemoryRequest,
    RetireMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.service import MemoryService
from powercontext.memory.transfer import OnExisting, import_lines

from .rebuild_reference import context_service, found, same_as_rebuild, write_turns

SCOPE = "imported"
TURNS = (
    "we talked about the weather",
    "the ferry was late again",
    "I adopted a zebracorn yesterday",
    "my sister visited on sunday",
    "dinner was pasta with basil",
    "the train to the coast was full",
)
QUERIES = (
    "zebracorn",
    "ferry sister",
    "pasta weather zebracorn",
    "quiet afternoon",
    "lighthouse ferry",
    "adopted cat",
)


_service = context_service
_found = found


async def _thread(memory: ScopedMemory) -> list[MemoryEntry]:
    return await write_turns(memory, TURNS)


async def _same_as_rebuild(service: MemoryService, revisions: list[int | None]) -> None:
    await same_as_rebuild(service, SCOPE, QUERIES, revisions)


async def _edited_export(
    memory: ScopedMemory, texts: dict[int, str], extra: list[dict[str, Any]] | None = None
) -> list[str]:
    """The scope's export with entry line `i` given `texts[i]`, the others left out, then
    `extra` entry lines; the header's count follows."""
    lines = [line async for line in (await memory.export()).lines()]
    entries = [json.loads(line) for line in lines[1:]]
    kept = [{**entries[i], "text": text} for i, text in texts.items()] + (extra or [])
    header = {**json.loads(lines[0]), "entry_count": len(kept)}
    return [json.dumps(line) + "\n" for line in [header, *kept]]


@pytest.mark.parametrize(("position", "word"), [(0, "weather"), (2, "zebracorn"), (5, "coast")])
async def test_a_replaced_turn_leaves_its_neighbours_index(
    store: MemoryStore, position: int, word: str
) -> None:
    service = _service(store)
    memory = service.for_scope(SCOPE)
    await _thread(memory)
    assert len(await _found(memory, word)) > 1  # the neighbours are found by its words
    result = await memory.import_lines(
        await _edited_export(memory, {position: "a quiet afternoon"}), on_existing="replace"
    )
    assert (result.added, result.replaced) == (0, 1)
    assert await _found(memory, word) == []
    # Indexed alone: its own words find it, and no neighbour by them.
    assert await _found(memory, "quiet afternoon") == ["a quiet afternoon"]
    # As of before the import, the replaced version is still found by its own words.
    assert TURNS[position] in await _found(memory, word, revision=len(TURNS))
    await _same_as_rebuild(service, [None, len(TURNS)])


async def test_replacing_and_adding_turns_in_one_batch_search_as_after_a_rebuild(
    store: MemoryStore,
) -> None:
    # An asymmetric window: the entries before a gap and after it close it differently.
    service = _service(store, IndexTextConfig(context_before=1, context_after=2))
    memory = service.for_scope(SCOPE)
    written = await _thread(memory)
    await memory.retire(RetireMemoryRequest(citation=written[4].citation))
    new = [
        {"entry_id": f"new-{i}", "text": text, "thread": "chat"}
        for i, text in enumerate(("the lighthouse was closed", "we took the last ferry home"))
    ]
    lines = await _edited_export(memory, {3: "a quiet afternoon", 2: "I adopted a cat"}, new)
    # Entry 4 was retired: its line (kept from an earlier export) reactivates it.
    back = {"entry_id": written[4].entry_id, "text": TURNS[4], "thread": "chat"}
    lines.insert(2, json.dumps(back) + "\n")
    header = json.loads(lines[0])
    lines[0] = json.dumps({**header, "entry_count": header["entry_count"] + 1}) + "\n"
    result = await memory.import_lines(lines, on_existing="replace")
    assert (result.added, result.replaced) == (2, 3)
    assert await _found(memory, "zebracorn") == []
    assert await _found(memory, "quiet") == ["a quiet afternoon"]
    # The new turns follow turn 5, the last of the thread's first versions.
    assert set(await _found(memory, "lighthouse")) == {
        TURNS[1],
        TURNS[5],
        "the lighthouse was closed",
        "we took the last ferry home",
    }
    # A replaced version keeps its own index: the turns that arrived with its replacement
    # are not its neighbours, as of any revision.
    assert TURNS[3] not in await _found(memory, "lighthouse", revision=len(TURNS) + 1)
    assert TURNS[5] in await _found(memory, "lighthouse", revision=len(TURNS) + 1)
    await _same_as_rebuild(service, [None, len(TURNS) + 1])


@pytest.mark.parametrize(
    ("on_existing", "batch_entries"),
    [("replace", 1), ("replace", 2), ("replace", 100), ("skip", 2)],
)
async def test_new_turns_imported_into_an_existing_thread_search_as_after_a_rebuild(
    store: MemoryStore, on_existing: OnExisting, batch_entries: int
) -> None:
    service = _service(store)
    memory = service.for_scope(SCOPE)
    await _thread(memory)
    new = [
        {"entry_id": f"new-{i}", "text": text, "thread": "chat"}
        for i, text in enumerate(("the lighthouse was closed", "we took the last ferry home"))
    ]
    # Turn 4 sits in the thread's tail, whose entries the new turns widen (unless replaced).
    lines = await _edited_export(memory, {4: "a quiet afternoon"}, new)
    result = await import_lines(
        service, SCOPE, lines, on_existing=on_existing, batch_entries=batch_entries
    )
    assert (result.added, result.replaced) == (2, int(on_existing == "replace"))
    found = await _found(memory, "lighthouse")
    assert TURNS[5] in found and "a quiet afternoon" not in found
    assert (TURNS[4] in found) == (on_existing == "skip")
    await _same_as_rebuild(service, [None, len(TURNS)])


async def test_a_replaced_batch_member_leaves_its_group(store: MemoryStore) -> None:
    # Thread-less entries grouped by a metadata key within their batch.
    index = IndexTextConfig(context_before=1, context_after=1, context_group_key="session")
    service = _service(store, index)
    memory = service.for_scope(SCOPE)
    await memory.remember_many(
        [
            RememberMemoryRequest(text=text, metadata={"session": i % 2})
            for i, text in enumerate(TURNS)
        ]
    )
    new = [{"entry_id": "new-0", "text": "the lighthouse was closed", "metadata": {"session": 0}}]
    lines = await _edited_export(memory, {2: "a quiet afternoon"}, new)
    await memory.import_lines(lines, on_existing="replace")
    assert await _found(memory, "zebracorn") == []
    await _same_as_rebuild(service, [None, 1])


async def test_a_failed_rederivation_leaves_the_import_standing(
    store: MemoryStore, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _service(store)
    memory = service.for_scope(SCOPE)
    await _thread(memory)
    lines = await _edited_export(memory, {2: "a quiet afternoon"})

    async def broken(*_args: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(store, "rewrite_index_tokens", broken)
    with caplog.at_level(logging.WARNING, logger="powercontext.memory"):
        result = await memory.import_lines(lines, on_existing="replace")
    assert result.memory_ref is not None and result.memory_ref.revision == len(TURNS) + 1
    assert "re-deriving the neighbours" in caplog.text
    monkeypatch.undo()
    assert len(await _found(memory, "zebracorn")) == 4  # stale until the rebuild repairs it
    await service.rebuild(SCOPE)
    assert await _found(memory, "zebracorn") == []
