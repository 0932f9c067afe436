"""Idempotent writes: a retry with the same key and body returns the original result.

The key and a hash of the write's body are recorded in the commit's own transaction (see
MemoryStore.commit), so a write that committed after its client gave up is found by the retry
instead of being written again. The same key with another body is refused (409).

An erasure (`forget`) blanks the body hash of every keyed write that touched an erased entry
(its add, revise, retire or reactivate, and the whole batch it was written in): the hash of
erased text would confirm a guess of it. Such a key answers any retry, whatever its body, with
ErasedError (410), never 409 (which would tell a guessed body from another) and never a new
write of the text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from pydantic import BaseModel

from powercontext.memory.entries import entry_from_stored
from powercontext.memory.errors import IdempotencyConflictError, MemoryValidationError
from powercontext.memory.models import MemoryRef, MemoryWriteResult
from powercontext.memory.ports import (
    IdempotencyClaim,
    IdempotentWrite,
    MemoryStore,
    TombstoneQuery,
)
from powercontext.memory.tombstones import erased_error, raise_if_version_erased

_NOT_HASHED = {"idempotency_key"}

ERASED_BODY_HASH = "erased"
"""The body hash an erasure leaves on the keyed writes that touched what it erased: not hex,
so no claim's SHA-256 matches it (check_body lets it through to `raise_if_body_erased`)."""


def claim_for(op: str, requests: Sequence[BaseModel]) -> IdempotencyClaim | None:
    """The claim of a write whose requests all carry one key (None when none carries one)."""
    keys = {getattr(request, "idempotency_key", None) for request in requests}
    if len(keys) > 1:
        raise MemoryValidationError("entries of one batch must share one idempotency_key")
    (key,) = keys
    if key is None:
        return None
    body = [request.model_dump(mode="json", exclude=_NOT_HASHED) for request in requests]
    canonical = json.dumps({"op": op, "body": body}, sort_keys=True, ensure_ascii=False)
    return IdempotencyClaim(key=key, body_hash=hashlib.sha256(canonical.encode()).hexdigest())


def check_body(claim: IdempotencyClaim, recorded: IdempotentWrite) -> None:
    if recorded.body_hash not in (claim.body_hash, ERASED_BODY_HASH):
        raise IdempotencyConflictError(
            "this idempotency_key was used by another write with a different body"
        )


async def replay(
    store: MemoryStore, scope_id: str, recorded: IdempotentWrite, pending: int
) -> MemoryWriteResult:
    """The original result of a recorded write: its revision and the versions it wrote.

    `vectors_pending` is today's count (at most the batch size), not the original one. When a
    version it wrote was erased since (`forget`), the original result cannot be given back:
    ErasedError (410), as for a citation of that version, never a shorter result."""
    await raise_if_body_erased(store, scope_id, recorded)
    stored = await store.fetch_versions(scope_id, recorded.keys)
    if len(stored) < len(set(recorded.keys)):
        await raise_if_erased(
            store, scope_id, recorded, {v.entry_version_id for v in stored.values()}
        )
    entries = tuple(
        entry_from_stored(scope_id, recorded.revision, stored[key])
        for key in recorded.keys
        if key in stored
    )
    return MemoryWriteResult(
        memory_ref=MemoryRef(scope_id=scope_id, revision=recorded.revision),
        entries=entries,
        vectors_pending=min(pending, len(entries)),
    )


async def raise_if_erased(
    store: MemoryStore, scope_id: str, recorded: IdempotentWrite, found: set[str]
) -> None:
    """ErasedError for a version the recorded write made that is no longer stored."""
    # The change log keeps the ids of erased versions: the recorded revision's changes name
    # every version the write made (one change per version), so the missing ones are there.
    changes = await store.changes(scope_id, recorded.revision - 1, limit=len(recorded.keys) + 1)
    for change in changes:
        if change.revision != recorded.revision or change.op in ("retire", "forget"):
            continue
        if change.entry_version_id not in found:
            await raise_if_version_erased(store, scope_id, change.entry_version_id)


async def raise_if_body_erased(
    store: MemoryStore, scope_id: str, recorded: IdempotentWrite
) -> None:
    """ErasedError for a recorded write whose body hash an erasure blanked, naming the first
    erased version among its changes (any retry body: the hash to compare with is gone)."""
    if recorded.body_hash != ERASED_BODY_HASH:
        return
    changes = await store.changes(scope_id, recorded.revision - 1, limit=len(recorded.keys) + 1)
    own = [c for c in changes if c.revision == recorded.revision and c.op != "forget"]
    entry_ids = tuple(dict.fromkeys(c.entry_id for c in own))
    found = await store.tombstones(TombstoneQuery(scope_id, entry_ids=entry_ids))
    # A retire's change names the version it retired: erased with its entry, like the rest.
    by_version = {t.entry_version_id: t for t in found}
    for change in own:
        if (tombstone := by_version.get(change.entry_version_id)) is not None:
            raise erased_error(tombstone, version_cited=True)
    if found:
        raise erased_error(found[0], version_cited=False)
    # Only a database edited by hand gets here (an erasure writes its tombstones in the
    # transaction that blanks the hash); the key stays unusable, whatever the body.
    raise IdempotencyConflictError(
        "this idempotency_key was used by a write whose entries were erased"
    )
