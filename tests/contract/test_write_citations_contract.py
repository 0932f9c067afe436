"""Contract: what a write's citation and idempotency key may name, on every backend.

A write (revise, retire, reactivate) acts on the version its citation names, so it accepts
exactly the citations `get` resolves: an erased version is ErasedError (410), a made-up one
NotFoundError (404). A keyed retry of a write whose versions were erased since cannot give the
original result back, so it is ErasedError too, never a shorter result.
"""

from __future__ import annotations

import pytest

from powercontext.memory.errors import ErasedError, NotFoundError
from powercontext.memory.models import (
    MemoryCitation,
    MemoryRef,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.service import MemoryService

SCOPE = "write-citations"


def _at(citation: MemoryCitation, revision: int) -> MemoryCitation:
    return citation.model_copy(update={"memory_ref": MemoryRef(scope_id=SCOPE, revision=revision)})


async def test_a_write_refuses_a_citation_get_would_not_resolve(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope(SCOPE)
    other = (await memory.remember(RememberMemoryRequest(text="the kettle"))).entries[0]
    entry = (await memory.remember(RememberMemoryRequest(text="the pot"))).entries[0]
    made_up = [
        _at(entry.citation, 3),  # a revision the scope never reached
        _at(entry.citation, 1),  # before the version was written
        entry.citation.model_copy(update={"entry_version_id": other.entry_version_id}),
    ]
    for citation in made_up:
        assert await memory.get(citation) is None
        with pytest.raises(NotFoundError):
            await memory.retire(RetireMemoryRequest(citation=citation))
        with pytest.raises(NotFoundError):
            await memory.revise(ReviseMemoryRequest(citation=citation, text="red pot"))
    assert (await memory.head()) == entry.citation.memory_ref  # nothing written
    # The citation as received still works.
    await memory.retire(RetireMemoryRequest(citation=entry.citation))


async def test_writes_citing_an_erased_entry_are_gone(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope(SCOPE)
    entry = (await memory.remember(RememberMemoryRequest(text="doomed"))).entries[0]
    retired = await memory.remember(RememberMemoryRequest(text="doomed too"))
    gone = retired.entries[0]
    await memory.retire(RetireMemoryRequest(citation=gone.citation))
    await memory.forget(entry.entry_id)
    await memory.forget(gone.entry_id)
    head = await memory.head()
    for citation in (entry.citation, gone.citation):
        with pytest.raises(ErasedError) as erased:
            await memory.revise(ReviseMemoryRequest(citation=citation, text="back"))
        assert erased.value.entry_id == citation.entry_id
        with pytest.raises(ErasedError):
            await memory.retire(RetireMemoryRequest(citation=citation))
        with pytest.raises(ErasedError):
            await memory.reactivate(ReactivateMemoryRequest(citation=citation))
    assert await memory.head() == head


async def test_a_keyed_retry_of_an_erased_write_is_gone(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope(SCOPE)
    batch = [RememberMemoryRequest(text=f"fact {i}", idempotency_key="load") for i in range(3)]
    first = await memory.remember_many(batch)
    assert await memory.remember_many(batch) == first
    doomed = first.entries[1]
    await memory.forget(doomed.entry_id)
    head = await memory.head()
    with pytest.raises(ErasedError) as erased:
        await memory.remember_many(batch)
    assert (erased.value.entry_id, erased.value.entry_version_id) == (
        doomed.entry_id,
        doomed.entry_version_id,
    )
    assert await memory.head() == head  # and nothing written again

    entry = (await memory.remember(RememberMemoryRequest(text="v one"))).entries[0]
    revise = ReviseMemoryRequest(citation=entry.citation, text="v two", idempotency_key="rev")
    await memory.revise(revise)
    await memory.forget(entry.entry_id)
    with pytest.raises(ErasedError):
        await memory.revise(revise)
