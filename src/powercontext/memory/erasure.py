"""Erasure: `forget` one entry, or a whole scope, for good.

Unlike `retire` (a revision after which the entry is inactive, its text kept for as-of reads
and citations), `forget` physically deletes the text, metadata, tokens and vectors of every
version, at every revision. What stays is history without content: the scope's revisions, the
change log (ids only; the reasons of the erased entries' changes are cleared, since free text
may quote them), a `forget` change per erased version naming the actor, and a tombstone per
version, so that a citation of it answers `erased` (ErasedError, HTTP 410), never the text.
The keyed writes that touched an erased entry keep their idempotency key but lose their body
hash (memory.idempotency): a retry of one answers `erased` whatever its body.

Derived data of other entries can hold erased words too: with contextual indexing an entry's
tokens and vector include its neighbours' text. After the erasure, every version of each
sequence (thread or batch) an erased version belonged to that can hold its words is
re-derived: the active ones as `reindex --rebuild` would, the retired or revised ones within
the sequence as it stood while they were active, the erased versions left out
(indexing.erasures). Each storage adapter documents how its bytes leave the disk.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from powercontext.memory.commit import COMMIT_RETRY_SECONDS
from powercontext.memory.errors import NotFoundError, RevisionConflictError
from powercontext.memory.idempotency import check_body, claim_for, raise_if_body_erased
from powercontext.memory.indexing.erasures import rederive_after_erasure
from powercontext.memory.models import MemoryRef
from powercontext.memory.ports import (
    NOTHING_ERASED,
    ErasureRequest,
    ErasureResult,
    IdempotentWrite,
)
from powercontext.memory.tombstones import raise_if_entry_erased
from powercontext.memory.values import MAX_REVISION, IdempotencyKey, LookupEntryId, Reason

if TYPE_CHECKING:
    from powercontext.memory.service import MemoryService

log = logging.getLogger("powercontext.memory")

MAX_FORGET_ENTRIES = 1000
"""Entry ids one `forget` call names at most; a whole scope goes through `forget_scope`."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ForgetMemoryRequest(_Frozen):
    """Erase every version of the named entries (all of them or none)."""

    entry_ids: tuple[LookupEntryId, ...] = Field(min_length=1, max_length=MAX_FORGET_ENTRIES)
    reason: Reason | None = None
    """An audit note kept with the `forget` changes; never put the erased content here."""
    expected_revision: int | None = Field(default=None, ge=0, le=MAX_REVISION)
    idempotency_key: IdempotencyKey | None = None
    """A retry with the same key and body answers the original result (not 410 `erased`)."""


class ForgetScopeRequest(_Frozen):
    """Erase every entry version of the scope; its revisions and tombstones remain."""

    reason: Reason | None = None
    expected_revision: int | None = Field(default=None, ge=0, le=MAX_REVISION)
    idempotency_key: IdempotencyKey | None = None
    """As for ForgetMemoryRequest."""


class MemoryForgetResult(_Frozen):
    """What an erasure did: its revision and the entries and versions it erased."""

    memory_ref: MemoryRef | None
    """The revision the erasure made (the head, unchanged, when nothing was left to erase;
    None for a scope with no revision)."""
    entry_ids: tuple[str, ...]
    """The entries erased, in the order of their first version."""
    erased_versions: int = Field(ge=0)


async def forget(
    service: MemoryService,
    scope_id: str,
    request: ForgetMemoryRequest | ForgetScopeRequest,
    *,
    actor: str | None,
) -> MemoryForgetResult:
    """Erase the request's entries, or the whole scope for a ForgetScopeRequest.

    NotFoundError for an unknown scope or entry, ErasedError for an entry already erased,
    RevisionConflictError when `expected_revision` is not the head. With an idempotency key
    an erasure recorded already: that erasure's result (IdempotencyConflictError for another
    body)."""
    entry_ids = request.entry_ids if isinstance(request, ForgetMemoryRequest) else None
    expected_revision, reason = request.expected_revision, request.reason
    claim = claim_for("forget" if entry_ids is not None else "forget_scope", [request])
    store = service.store
    give_up = time.monotonic() + COMMIT_RETRY_SECONDS
    async with service.lock_of(scope_id):
        while True:
            if claim is not None and (
                recorded := await store.idempotent_write(scope_id, claim.key)
            ):
                check_body(claim, recorded)
                await raise_if_body_erased(store, scope_id, recorded)  # a write's key, erased
                return await _recorded_result(service, scope_id, recorded)
            head = await store.head(scope_id)
            if head is None:
                raise NotFoundError(f"scope {scope_id!r} has no revision yet")
            if expected_revision is not None and expected_revision != head:
                raise RevisionConflictError(
                    f"scope {scope_id!r} is at revision {head}, expected {expected_revision}",
                    expected=expected_revision,
                    actual=head,
                )
            if entry_ids is not None:
                await _require_stored(service, scope_id, entry_ids)
            try:
                erasure = ErasureRequest(
                    scope_id, head, entry_ids, actor=actor, reason=reason, idempotency=claim
                )
                result = await store.erase(erasure)
                break
            except RevisionConflictError:
                # Another process committed first: look again at the head, and at the key,
                # which that process may have recorded with this very erasure.
                if time.monotonic() >= give_up or (expected_revision is not None and not claim):
                    raise
                await asyncio.sleep(random.uniform(0.001, 0.05))
    if result.erased:
        service.indexer.drop_recent()
        try:
            await _rederive_neighbours(service, scope_id, result)
        except Exception as exc:
            # The erasure itself committed; failing the call now would have a client retry
            # it into a 410. The neighbours (active or not) may keep erased words in their
            # tokens until `reindex --rebuild`, so this is an error, not a warning. Their
            # vectors were deleted if they could be (indexing.erasures).
            log.error(
                "after erasing %d versions of scope %r, re-deriving their neighbours' index "
                "failed (%s); run `powercontext reindex --rebuild` with the embedding model "
                "configured",
                len(result.erased),
                scope_id,
                type(exc).__name__,
            )
        await store.scrub(scope_id)
    revision = result.revision or head
    return MemoryForgetResult(
        memory_ref=MemoryRef(scope_id=scope_id, revision=revision),
        entry_ids=tuple(dict.fromkeys(v.entry_id for v in result.erased)),
        erased_versions=len(result.erased),
    )


async def _recorded_result(
    service: MemoryService, scope_id: str, recorded: IdempotentWrite
) -> MemoryForgetResult:
    """The result an earlier erasure gave, read back from its `forget` changes (ids only).

    The scrub runs again: a first call can have failed in it after its erasure committed, and
    its retry is what a client makes next."""
    if recorded.keys == NOTHING_ERASED:
        ref = MemoryRef(scope_id=scope_id, revision=recorded.revision)
        return MemoryForgetResult(memory_ref=ref, entry_ids=(), erased_versions=0)
    await service.store.scrub(scope_id)
    changes = await service.store.changes(scope_id, recorded.revision - 1, limit=1)
    forgotten = [c for c in changes if c.revision == recorded.revision and c.op == "forget"]
    return MemoryForgetResult(
        memory_ref=MemoryRef(scope_id=scope_id, revision=recorded.revision),
        entry_ids=tuple(dict.fromkeys(c.entry_id for c in forgotten)),
        erased_versions=len(forgotten),
    )


async def _require_stored(service: MemoryService, scope_id: str, entry_ids: Sequence[str]) -> None:
    for entry_id in dict.fromkeys(entry_ids):
        if await service.store.latest_version(scope_id, entry_id) is not None:
            continue
        await raise_if_entry_erased(service.store, scope_id, entry_id)
        raise NotFoundError(f"entry {entry_id!r} does not exist in this scope")


async def _rederive_neighbours(
    service: MemoryService, scope_id: str, result: ErasureResult
) -> None:
    """Re-index every version, active or not, whose tokens or vector can hold an erased
    version's words (contextual indexing; see indexing.erasures)."""
    if result.erased:
        await rederive_after_erasure(
            service.indexer,
            service.config.index,
            service.config.analyzer,
            scope_id,
            result.erased,
        )
