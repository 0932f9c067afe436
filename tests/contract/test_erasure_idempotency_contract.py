"""Contract: an erasure leaves no hash of the erased content in the idempotency records.

A keyed write records its key with a SHA-256 of its request body. Once an entry is erased,
the hash of the write that created it (with its whole batch) and of any keyed revise, retire or
reactivate of it would confirm a guess of the erased text: the erasure blanks those hashes in
its own transaction. The keys stay, so a retry writes nothing again: it answers ErasedError
(410) whatever its body, never IdempotencyConflictError (409), which would tell a correct guess
from a wrong one. Keys of other writes, and of erasures (ids only), keep their hash.
"""

from __future__ import annotations

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.erasure import ForgetMemoryRequest, ForgetScopeRequest
from powercontext.memory.errors import ErasedError, IdempotencyConflictError
from powercontext.memory.idempotency import claim_for
from powercontext.memory.models import (
    MemoryWriteResult,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.service import MemoryService

SCOPE = "erasure-keys"
SECRET = "the vault code is 7481 zebracorn"
ERASED_WRITES = ("load", "rev", "ret", "react")


def _memory(store: MemoryStore) -> ScopedMemory:
    return MemoryService(store, embedder=HashingEmbedder(dimension=32)).for_scope(SCOPE)


async def _keyed_history(memory: ScopedMemory) -> tuple[MemoryWriteResult, ...]:
    """A batch with the secret and a kept entry, a keyed revise, retire and reactivate of the
    secret, and a keyed write of another entry."""
    batch = [
        RememberMemoryRequest(text=SECRET, idempotency_key="load"),
        RememberMemoryRequest(text="a kept fact", idempotency_key="load"),
    ]
    loaded = await memory.remember_many(batch)
    secret = loaded.entries[0]
    revised = await memory.revise(
        ReviseMemoryRequest(citation=secret.citation, text=SECRET + "!", idempotency_key="rev")
    )
    retired = await memory.retire(
        RetireMemoryRequest(
            citation=revised.entries[0].citation, reason="code rotated", idempotency_key="ret"
        )
    )
    reactivated = await memory.reactivate(
        ReactivateMemoryRequest(citation=revised.entries[0].citation, idempotency_key="react")
    )
    solo = await memory.remember(RememberMemoryRequest(text="another note", idempotency_key="solo"))
    return loaded, revised, retired, reactivated, solo


async def _hashes(store: MemoryStore, keys: tuple[str, ...]) -> dict[str, str]:
    found = {key: await store.idempotent_write(SCOPE, key) for key in keys}
    return {key: recorded.body_hash for key, recorded in found.items() if recorded is not None}


async def test_forget_blanks_the_hash_of_every_keyed_write_that_touched_the_entry(
    store: MemoryStore,
) -> None:
    memory = _memory(store)
    loaded, *_ = await _keyed_history(memory)
    secret = loaded.entries[0]
    keys = (*ERASED_WRITES, "solo")
    before = await _hashes(store, keys)
    assert set(before) == set(keys)
    # The recorded hash is the one a guess of the body recomputes: that is the leak.
    guess = [RememberMemoryRequest(text=t, idempotency_key="load") for t in (SECRET, "a kept fact")]
    claim = claim_for("remember", guess)
    assert claim is not None and before["load"] == claim.body_hash

    forget = ForgetMemoryRequest(entry_ids=(secret.entry_id,), idempotency_key="f-1")
    await memory.forget(forget, actor=None)

    after = await _hashes(store, (*keys, "f-1"))
    assert set(after) == {*keys, "f-1"}  # every key is kept: a retry must not write again
    old = {before[key] for key in ERASED_WRITES}
    assert not old & set(after.values()), "a hash of an erased write's body is still stored"
    assert after["solo"] == before["solo"]
    forget_claim = claim_for("forget", [forget])
    assert forget_claim is not None and after["f-1"] == forget_claim.body_hash


async def test_a_retry_of_an_erased_write_key_is_erased_whatever_its_body(
    store: MemoryStore,
) -> None:
    memory = _memory(store)
    loaded, revised, _, _, solo = await _keyed_history(memory)
    secret, kept = loaded.entries
    forget = ForgetMemoryRequest(entry_ids=(secret.entry_id,), idempotency_key="f-1")
    forgotten = await memory.forget(forget, actor=None)
    head = await memory.head()

    right = [RememberMemoryRequest(text=t, idempotency_key="load") for t in (SECRET, "a kept fact")]
    wrong = [RememberMemoryRequest(text=t, idempotency_key="load") for t in ("guess", "other")]
    for batch in (right, wrong):  # the same answer: a retry cannot test a guess
        with pytest.raises(ErasedError) as erased:
            await memory.remember_many(batch)
        assert (erased.value.entry_id, erased.value.entry_version_id) == (
            secret.entry_id,
            secret.entry_version_id,
        )
    retire = RetireMemoryRequest(
        citation=revised.entries[0].citation, reason="code rotated", idempotency_key="ret"
    )
    for request in (retire, retire.model_copy(update={"reason": "a guess"})):
        with pytest.raises(ErasedError) as erased:
            await memory.retire(request)
        assert erased.value.entry_version_id == revised.entries[0].entry_version_id
    with pytest.raises(ErasedError):
        await memory.revise(
            ReviseMemoryRequest(citation=kept.citation, text="x", idempotency_key="rev")
        )
    with pytest.raises(ErasedError):
        await memory.forget(
            ForgetMemoryRequest(entry_ids=(kept.entry_id,), idempotency_key="react")
        )
    assert await memory.head() == head  # nothing written again

    # Other keys answer as before.
    again = await memory.remember(
        RememberMemoryRequest(text="another note", idempotency_key="solo")
    )
    assert again == solo
    with pytest.raises(IdempotencyConflictError):
        await memory.remember(RememberMemoryRequest(text="a guess", idempotency_key="solo"))
    assert await memory.forget(forget, actor=None) == forgotten


async def test_forget_scope_blanks_every_write_hash_but_not_an_erasure_s(
    store: MemoryStore,
) -> None:
    memory = _memory(store)
    loaded, *_ = await _keyed_history(memory)
    first = ForgetMemoryRequest(entry_ids=(loaded.entries[0].entry_id,), idempotency_key="f-1")
    await memory.forget(first, actor=None)
    keys = (*ERASED_WRITES, "solo", "f-1")
    before = await _hashes(store, keys)
    await memory.forget_scope(ForgetScopeRequest(idempotency_key="all"), actor=None)

    after = await _hashes(store, (*keys, "all"))
    assert set(after) == {*keys, "all"}
    assert before["solo"] not in after.values()
    assert after["f-1"] == before["f-1"]
    with pytest.raises(ErasedError):
        await memory.remember(RememberMemoryRequest(text="a guess", idempotency_key="solo"))
