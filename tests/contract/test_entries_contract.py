"""Contract: one entry by id (at the head or a revision), its history, and idempotent writes."""

from __future__ import annotations

import pytest

from powercontext.memory.errors import IdempotencyConflictError, NotFoundError
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
)
from powercontext.memory.ports import CommitRequest, IdempotencyClaim, MemoryStore
from powercontext.memory.service import MemoryService

from .builders import add, revise

SCOPE = "entries"


async def test_entry_versions_lists_every_version_in_order(store: MemoryStore) -> None:
    first = await store.commit(
        CommitRequest("s", None, [add("one", entry_id="a"), add("x", entry_id="b")])
    )
    a1 = (await store.fetch_versions("s", first.keys))[first.keys[0]]
    await store.commit(CommitRequest("s", 1, [revise(a1, "two")]))
    versions = await store.entry_versions("s", "a")
    assert [(v.version, v.text) for v in versions] == [(1, "one"), (2, "two")]
    assert await store.entry_versions("s", "missing") == []
    assert await store.entry_versions("other", "a") == []


async def test_an_idempotency_key_is_recorded_with_its_commit(store: MemoryStore) -> None:
    claim = IdempotencyClaim(key="k1", body_hash="h")
    result = await store.commit(
        CommitRequest("s", None, [add("one"), add("two")], idempotency=claim)
    )
    recorded = await store.idempotent_write("s", "k1")
    assert recorded is not None
    assert (recorded.body_hash, recorded.revision, recorded.keys) == ("h", 1, result.keys)
    assert await store.idempotent_write("other", "k1") is None
    # A second commit under the same key is refused and writes nothing.
    with pytest.raises(Exception):  # noqa: B017 - RevisionConflictError on both backends
        await store.commit(CommitRequest("s", 1, [add("three")], idempotency=claim))
    assert await store.head("s") == 1


async def test_get_entry_by_id_at_head_and_at_a_revision(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope(SCOPE)
    written = await memory.remember(RememberMemoryRequest(text="the pot is blue"))
    entry = written.entries[0]
    await memory.remember(RememberMemoryRequest(text="unrelated"))
    revised = await memory.revise(ReviseMemoryRequest(citation=entry.citation, text="red pot"))
    await memory.retire(RetireMemoryRequest(citation=revised.entries[0].citation))

    at_two = await memory.get_entry(entry.entry_id, revision=2)
    assert (at_two.text, at_two.version, at_two.citation.memory_ref.revision) == (
        "the pot is blue",
        1,
        2,
    )
    assert (await memory.get_entry(entry.entry_id, revision=3)).text == "red pot"
    with pytest.raises(NotFoundError, match="no active version"):
        await memory.get_entry(entry.entry_id)  # retired at the head
    with pytest.raises(NotFoundError):
        await memory.get_entry("nope")
    with pytest.raises(NotFoundError):
        await memory.get_entry(entry.entry_id, revision=99)


async def test_history_is_newest_first_and_reads_at_a_revision(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope(SCOPE)
    entry = (await memory.remember(RememberMemoryRequest(text="v one"))).entries[0]
    two = await memory.revise(ReviseMemoryRequest(citation=entry.citation, text="v two"))
    await memory.retire(RetireMemoryRequest(citation=two.entries[0].citation, reason="gone"))

    now = await memory.history(entry.entry_id)
    assert [c.op for c in now.changes] == ["retire", "revise", "add"]
    assert [v.entry.text for v in now.versions] == ["v two", "v one"]
    assert now.active_version is None and now.memory_ref.revision == 3

    then = await memory.history(entry.entry_id, revision=2)
    assert [c.op for c in then.changes] == ["revise", "add"]
    assert then.active_version is not None and then.active_version.text == "v two"
    assert then.memory_ref.revision == 2
    with pytest.raises(NotFoundError):
        await memory.history(entry.entry_id, revision=4)


async def test_a_retried_write_with_its_key_returns_the_original_result(
    store: MemoryStore,
) -> None:
    memory = MemoryService(store).for_scope(SCOPE)
    batch = [RememberMemoryRequest(text=f"fact {i}", idempotency_key="batch-1") for i in range(3)]
    first = await memory.remember_many(batch)
    again = await memory.remember_many(batch)
    assert again.memory_ref == first.memory_ref
    assert again.citations == first.citations
    assert (await memory.head()) == first.memory_ref  # nothing written twice
    listed = await memory.list()
    assert len(listed.entries) == 3

    other = [RememberMemoryRequest(text="another body", idempotency_key="batch-1")]
    with pytest.raises(IdempotencyConflictError):
        await memory.remember_many(other)
    # A key is per scope; another op under the key is another body.
    retire = RetireMemoryRequest(citation=first.entries[0].citation, idempotency_key="batch-1")
    with pytest.raises(IdempotencyConflictError):
        await memory.retire(retire)
    elsewhere = MemoryService(store).for_scope("elsewhere")
    assert (await elsewhere.remember_many(batch)).memory_ref.revision == 1


async def test_a_retried_revise_with_its_key_is_not_a_conflict(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope(SCOPE)
    entry = (await memory.remember(RememberMemoryRequest(text="v one"))).entries[0]
    request = ReviseMemoryRequest(
        citation=entry.citation, text="v two", expected_revision=1, idempotency_key="r"
    )
    first = await memory.revise(request)
    # The citation now names an older version and the head moved: without the key this
    # retry would be a 409; with it, it is the original answer.
    assert await memory.revise(request) == first
    assert (await memory.head()) == first.memory_ref


async def test_keys_of_one_batch_must_agree(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope(SCOPE)
    mixed = [
        RememberMemoryRequest(text="a", idempotency_key="one"),
        RememberMemoryRequest(text="b", idempotency_key="two"),
    ]
    with pytest.raises(ValueError, match="idempotency_key"):
        await memory.remember_many(mixed)


async def test_scopes_list_head_and_entry_count(store: MemoryStore) -> None:
    service = MemoryService(store)
    one = service.for_scope("one")
    written = await one.remember_many([RememberMemoryRequest(text=t) for t in ("a", "b", "c")])
    await one.retire(RetireMemoryRequest(citation=written.entries[0].citation))
    await service.for_scope("two").remember(RememberMemoryRequest(text="x"))
    found = {s.scope_id: (s.memory_ref.revision, s.entry_count) for s in await service.scopes()}
    assert found == {"one": (2, 2), "two": (1, 1)}
    only = await service.scopes(lambda scope: scope == "two")
    assert [s.scope_id for s in only] == ["two"]
