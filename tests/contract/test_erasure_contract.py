"""Contract: `forget` erases an entry (or a scope) on every backend, leaving tombstones.

What is erased must be unreachable by every read: get by citation and by id, list, search in
each channel at every revision, history. What stays: revisions, change ids, a `forget` change
per version naming the actor, and counts that match what the reads now find.
"""

from __future__ import annotations

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.erasure import ForgetMemoryRequest, ForgetScopeRequest
from powercontext.memory.errors import (
    ErasedError,
    IdempotencyConflictError,
    NotFoundError,
    RevisionConflictError,
    StorageError,
)
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService

SCOPE = "erasure"
SECRET = "zebracorn passphrase quokka"


def _memory(store: MemoryStore, *, contextual: bool = False) -> ScopedMemory:
    index = IndexTextConfig(context_before=1, context_after=1) if contextual else IndexTextConfig()
    config = SearchConfig(min_similarity=-1.0, index=index)
    return MemoryService(store, embedder=HashingEmbedder(), config=config).for_scope(SCOPE)


async def _texts(memory: ScopedMemory, query: str, mode: str, revision: int | None) -> list[str]:
    page = await memory.search(
        SearchMemoryRequest(query=query, mode=mode, revision=revision, limit=50)  # type: ignore[arg-type]
    )
    return [hit.text for hit in page.hits]


async def test_forget_erases_every_version_from_every_read(store: MemoryStore) -> None:
    memory = _memory(store)
    written = await memory.remember(RememberMemoryRequest(text=SECRET, metadata={"k": "v"}))
    secret = written.entries[0]
    kept = (await memory.remember(RememberMemoryRequest(text="a quokka story kept"))).entries[0]
    revised = await memory.revise(
        ReviseMemoryRequest(citation=secret.citation, text=SECRET + " revised", reason="typo")
    )
    for mode in ("fts", "vector"):
        assert SECRET in " ".join(await _texts(memory, "zebracorn quokka", mode, 1))

    result = await memory.forget(
        ForgetMemoryRequest(entry_ids=(secret.entry_id,), reason="user request"), actor="key-1"
    )
    assert (result.memory_ref and result.memory_ref.revision) == 4
    assert (result.entry_ids, result.erased_versions) == ((secret.entry_id,), 2)

    for citation in (secret.citation, revised.entries[0].citation):
        with pytest.raises(ErasedError) as raised:
            await memory.get(citation)
        assert raised.value.code == "erased"
        assert raised.value.erased_revision == 4
        assert "zebracorn" not in str(raised.value)
    with pytest.raises(ErasedError):
        await memory.get_entry(secret.entry_id, revision=1)
    for revision in (1, 2, 3, 4):
        for mode in ("fts", "vector", "hybrid"):
            texts = await _texts(memory, "zebracorn quokka passphrase", mode, revision)
            assert not any("zebracorn" in text for text in texts), (mode, revision)
        listed = await memory.list(revision=revision)
        assert [e.entry_id for e in listed.entries] == ([] if revision == 1 else [kept.entry_id])
        assert await store.active_count(SCOPE, revision) == len(listed.entries)
    assert await store.entry_versions(SCOPE, secret.entry_id) == []
    # The kept entry still answers, by both channels.
    assert await _texts(memory, "quokka story", "fts", None) == ["a quokka story kept"]
    assert await memory.pending_vectors() == 0


async def test_the_audit_change_names_the_actor_and_no_content(store: MemoryStore) -> None:
    memory = _memory(store)
    written = await memory.remember(RememberMemoryRequest(text=SECRET, reason="said " + SECRET))
    entry = written.entries[0]
    await memory.forget(
        ForgetMemoryRequest(entry_ids=(entry.entry_id,), reason="ticket 42"), actor="key-abc"
    )
    changes = (await memory.changes()).changes
    assert [(c.revision, c.op) for c in changes] == [(1, "add"), (2, "forget")]
    forget = changes[1]
    assert (forget.entry_id, forget.entry_version_id) == (entry.entry_id, entry.entry_version_id)
    assert (forget.actor, forget.reason) == ("key-abc", "ticket 42")
    # The erased entry's own change keeps its ids but loses its free-text reason.
    assert changes[0].reason is None
    history = await memory.history(entry.entry_id)
    assert [c.op for c in history.changes] == ["forget", "add"]
    assert (history.versions, history.active_version) == ((), None)
    assert "zebracorn" not in history.model_dump_json()


async def test_forget_refuses_unknown_erased_and_stale(store: MemoryStore) -> None:
    memory = _memory(store)
    with pytest.raises(NotFoundError):
        await memory.forget("nothing-yet")
    entry = (await memory.remember(RememberMemoryRequest(text=SECRET))).entries[0]
    with pytest.raises(NotFoundError):
        await memory.forget("missing")
    with pytest.raises(RevisionConflictError):
        await memory.forget(ForgetMemoryRequest(entry_ids=(entry.entry_id,), expected_revision=7))
    await memory.forget(entry.entry_id)
    with pytest.raises(ErasedError):
        await memory.forget(entry.entry_id)
    # A retired entry is erased too (retire keeps the text; forget does not).
    other = (await memory.remember(RememberMemoryRequest(text="old news"))).entries[0]
    await memory.retire(RetireMemoryRequest(citation=other.citation))
    result = await memory.forget(other.entry_id)
    assert result.erased_versions == 1
    assert await store.entry_versions(SCOPE, other.entry_id) == []


async def test_forget_scope_erases_everything_and_the_scope_goes_on(store: MemoryStore) -> None:
    memory = _memory(store)
    batch = await memory.remember_many(
        [RememberMemoryRequest(text=f"{SECRET} number {i}") for i in range(5)]
    )
    other = MemoryService(store).for_scope("neighbour")
    await other.remember(RememberMemoryRequest(text=SECRET))

    result = await memory.forget_scope(ForgetScopeRequest(reason="offboarding"), actor="admin")
    assert (result.erased_versions, len(result.entry_ids)) == (5, 5)
    assert (result.memory_ref and result.memory_ref.revision) == 2
    assert (await memory.list(revision=1)).entries == ()
    assert await _texts(memory, "zebracorn", "fts", 1) == []
    with pytest.raises(ErasedError):
        await memory.get(batch.entries[0].citation)
    # Other scopes are untouched; the erased scope takes new writes.
    assert len((await other.list()).entries) == 1
    await memory.remember(RememberMemoryRequest(text="fresh start"))
    assert [e.text for e in (await memory.list()).entries] == ["fresh start"]
    # Nothing left to erase: no new revision.
    await memory.forget_scope()
    again = await memory.forget_scope()
    assert (again.erased_versions, again.memory_ref and again.memory_ref.revision) == (0, 4)
    with pytest.raises(NotFoundError):
        await MemoryService(store).for_scope("never-written").forget_scope()


async def test_neighbours_lose_the_erased_words_in_their_derived_index(
    store: MemoryStore,
) -> None:
    memory = _memory(store, contextual=True)
    first = await memory.remember(RememberMemoryRequest(text="morning walk", thread="t"))
    secret = await memory.remember(RememberMemoryRequest(text=SECRET, thread="t"))
    # With contextual indexing the neighbour is found by the secret's words...
    assert "morning walk" in await _texts(memory, "zebracorn", "fts", None)
    await memory.forget(secret.entries[0].entry_id)
    # ...and no longer after the erasure, in either channel.
    assert await _texts(memory, "zebracorn", "fts", None) == []
    assert await _texts(memory, "morning", "fts", None) == ["morning walk"]
    assert first.entries[0].entry_id in {e.entry_id for e in (await memory.list()).entries}


async def test_a_keyed_forget_answers_a_retry_with_its_original_result(
    store: MemoryStore,
) -> None:
    memory = _memory(store)
    first = (await memory.remember(RememberMemoryRequest(text="first"))).entries[0]
    second = await memory.remember_many(
        [RememberMemoryRequest(text="second"), RememberMemoryRequest(text="third")]
    )
    await memory.revise(ReviseMemoryRequest(citation=first.citation, text="first, revised"))
    ids = (first.entry_id, second.entries[0].entry_id)
    request = ForgetMemoryRequest(entry_ids=ids, reason="request 7", idempotency_key="k-7")
    erased = await memory.forget(request, actor="key-1")
    assert (erased.entry_ids, erased.erased_versions) == (ids, 3)

    # A retry after a lost answer: the same result, not 410 erased, and no new revision.
    assert await memory.forget(request, actor="key-1") == erased
    assert await memory.head() == erased.memory_ref
    with pytest.raises(IdempotencyConflictError):
        await memory.forget(request.model_copy(update={"reason": "other"}), actor="key-1")
    # Keys are shared with the other writes of the scope.
    with pytest.raises(IdempotencyConflictError):
        await memory.remember(RememberMemoryRequest(text="x", idempotency_key="k-7"))

    scope_wide = ForgetScopeRequest(idempotency_key="all-1")
    cleared = await memory.forget_scope(scope_wide)
    assert cleared.erased_versions == 1 and cleared.entry_ids == (second.entries[1].entry_id,)
    assert await memory.forget_scope(scope_wide) == cleared


async def test_a_keyed_erasure_that_found_nothing_is_recorded_too(store: MemoryStore) -> None:
    """Its retry must not erase what was written since (the SDK retries erasures)."""
    memory = _memory(store)
    await memory.remember(RememberMemoryRequest(text="gone soon"))
    await memory.forget_scope(ForgetScopeRequest())
    empty = ForgetScopeRequest(idempotency_key="noop-1")
    nothing = await memory.forget_scope(empty)
    assert nothing.erased_versions == 0
    kept = await memory.remember(RememberMemoryRequest(text="written after"))
    assert await memory.forget_scope(empty) == nothing  # answered, not run again
    assert (await memory.get(kept.entries[0].citation)) is not None
    with pytest.raises(IdempotencyConflictError):
        await memory.remember(RememberMemoryRequest(text="x", idempotency_key="noop-1"))


async def test_a_keyed_retry_after_a_failed_scrub_scrubs_again(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = _memory(store)
    written = await memory.remember(RememberMemoryRequest(text=SECRET))
    scrubs: list[str] = []
    real_scrub = store.scrub

    async def scrub_failing_once(scope_id: str) -> None:
        scrubs.append(scope_id)
        if len(scrubs) == 1:
            raise StorageError("the disk hiccuped")
        await real_scrub(scope_id)

    monkeypatch.setattr(store, "scrub", scrub_failing_once)
    request = ForgetMemoryRequest(entry_ids=(written.entries[0].entry_id,), idempotency_key="s-1")
    with pytest.raises(StorageError):
        await memory.forget(request)  # committed, then failed in the scrub
    again = await memory.forget(request)
    assert again.erased_versions == 1 and scrubs == [SCOPE, SCOPE]


async def test_erased_since_tells_the_revisions_after_an_erasure(store: MemoryStore) -> None:
    memory = _memory(store)
    batch = [RememberMemoryRequest(text=f"turn {i}", thread="t") for i in range(5)]
    first = (await memory.remember_many(batch)).entries[0]
    await memory.retire(RetireMemoryRequest(citation=first.citation))  # revision 2
    assert not await store.erased_since(SCOPE, 0)
    forgotten = await memory.forget(ForgetMemoryRequest(entry_ids=(first.entry_id,)))
    assert forgotten.memory_ref is not None and forgotten.memory_ref.revision == 3
    await memory.remember_many(batch)  # revision 4: more changes after it than revisions
    assert [await store.erased_since(SCOPE, r) for r in range(5)] == [True] * 3 + [False] * 2
    assert not await store.erased_since("another scope", 0)
