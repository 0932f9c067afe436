"""Contract: a thread entry that leaves its thread (retire, revise) leaves its neighbours' index.

With contextual indexing an entry's tokens and vector hold its neighbours' words. After a
retire or a revise, every search (each mode, at the head and as of earlier revisions, scores
included) must answer what it answers after `reindex --rebuild`; the rebuild is the reference.
"""

from __future__ import annotations

import logging

import pytest

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import (
    MemoryEntry,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.service import MemoryService

from .rebuild_reference import context_service, found, same_as_rebuild, write_turns

SCOPE = "gaps"
TURNS = (
    "we talked about the weather",
    "the ferry was late again",
    "I adopted a zebracorn yesterday",
    "my sister visited on sunday",
    "dinner was pasta with basil",
    "the train to the coast was full",
    "tomorrow we hike the ridge",
)
WORDS = ("weather", "ferry", "zebracorn", "sister", "pasta", "coast", "ridge")
"""A word only that turn holds."""
QUERIES = ("zebracorn", "ferry sister", "pasta weather zebracorn", "train ridge", "adopted cat")


_service = context_service
_found = found


async def _thread(memory: ScopedMemory) -> list[MemoryEntry]:
    return await write_turns(memory, TURNS)


async def _same_as_rebuild(service: MemoryService, revisions: list[int | None]) -> None:
    await same_as_rebuild(service, SCOPE, QUERIES, revisions)


@pytest.mark.parametrize("position", [0, 2, 3, 6])
async def test_a_retired_turn_leaves_its_neighbours_index(
    store: MemoryStore, position: int
) -> None:
    service = _service(store)
    memory = service.for_scope(SCOPE)
    written = await _thread(memory)
    word = WORDS[position]
    assert len(await _found(memory, word)) > 1  # the neighbours are found by its words
    retired = await memory.retire(RetireMemoryRequest(citation=written[position].citation))
    assert await _found(memory, word) == []
    # As of before the retire, the entry itself is still found by its own words.
    assert TURNS[position] in await _found(memory, word, revision=len(TURNS))
    await _same_as_rebuild(service, [None, len(TURNS), retired.memory_ref.revision])


async def test_a_revised_turn_leaves_its_neighbours_index(store: MemoryStore) -> None:
    service = _service(store)
    memory = service.for_scope(SCOPE)
    written = await _thread(memory)
    await memory.revise(
        ReviseMemoryRequest(citation=written[2].citation, text="I adopted a cat yesterday")
    )
    assert await _found(memory, "zebracorn") == []
    assert await _found(memory, "cat") == ["I adopted a cat yesterday"]  # indexed alone
    await _same_as_rebuild(service, [None, len(TURNS)])


async def test_retire_then_reactivate_then_more_turns_search_as_after_a_rebuild(
    store: MemoryStore,
) -> None:
    # An asymmetric window: the entries before the gap and after it close it differently.
    service = _service(store, IndexTextConfig(context_before=1, context_after=2))
    memory = service.for_scope(SCOPE)
    written = await _thread(memory)
    await memory.retire(RetireMemoryRequest(citation=written[3].citation))
    await memory.retire(RetireMemoryRequest(citation=written[4].citation))
    assert await _found(memory, "sister pasta") == []
    await _same_as_rebuild(service, [None])
    await memory.reactivate(ReactivateMemoryRequest(citation=written[4].citation))
    await memory.remember(RememberMemoryRequest(text="the ridge was foggy", thread="chat"))
    # Reactivated, it is indexed alone and is nobody's neighbour, as a rebuild indexes it.
    assert await _found(memory, "pasta") == [TURNS[4]]
    await _same_as_rebuild(service, [None, len(TURNS) + 1])


async def test_a_retired_batch_member_leaves_its_group(store: MemoryStore) -> None:
    # Thread-less entries grouped by a metadata key within their batch.
    index = IndexTextConfig(context_before=1, context_after=1, context_group_key="session")
    service = _service(store, index)
    memory = service.for_scope(SCOPE)
    result = await memory.remember_many(
        [
            RememberMemoryRequest(text=text, metadata={"session": i % 2})
            for i, text in enumerate(TURNS)
        ]
    )
    await memory.retire(RetireMemoryRequest(citation=result.entries[2].citation))
    assert await _found(memory, "zebracorn") == []
    await _same_as_rebuild(service, [None, 1])


async def test_a_failed_rederivation_leaves_the_retire_standing(
    store: MemoryStore, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _service(store)
    memory = service.for_scope(SCOPE)
    written = await _thread(memory)

    async def broken(*_args: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(store, "rewrite_index_tokens", broken)
    with caplog.at_level(logging.WARNING, logger="powercontext.memory"):
        retired = await memory.retire(RetireMemoryRequest(citation=written[2].citation))
    assert retired.memory_ref.revision == len(TURNS) + 1
    assert "re-deriving the neighbours" in caplog.text
    monkeypatch.undo()
    assert len(await _found(memory, "zebracorn")) == 4  # stale until the rebuild repairs it
    await service.rebuild(SCOPE)
    assert await _found(memory, "zebracorn") == []
