"""Revisioned writes: what each one changes (its plan) and what follows its commit.

A write is a plan, run under the scope lock so it reads the state its compare-and-swap
extends, then the commit (memory.commit), then the indexing the commit makes due. Plans that
act on an existing entry take a citation, and act only if it names the entry's latest version:
a writer who read an older one would otherwise overwrite a change it never saw.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from powercontext.memory.commit import Planner, check_batch_size, commit_planned
from powercontext.memory.entries import entry_from_stored
from powercontext.memory.errors import (
    MemoryValidationError,
    NotFoundError,
    RevisionConflictError,
    failure_summary,
)
from powercontext.memory.idempotency import claim_for, replay
from powercontext.memory.indexing.context import IndexSource, fts_tokens
from powercontext.memory.indexing.erasure_races import settle_write
from powercontext.memory.indexing.removals import rederive_around
from powercontext.memory.indexing.threads import WriteIndex, source_of
from powercontext.memory.models import (
    MemoryCitation,
    MemoryRef,
    MemoryWriteResult,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
)
from powercontext.memory.ports import (
    IdempotencyClaim,
    IdempotentWrite,
    NewVersion,
    PlannedChange,
    StoredVersion,
)
from powercontext.memory.search.config import SearchConfig

if TYPE_CHECKING:
    from powercontext.memory.service import MemoryService

log = logging.getLogger("powercontext.memory")


def new_version(
    config: SearchConfig,
    entry_id: str,
    version: int,
    source: IndexSource,
    tokens: str | None = None,
) -> NewVersion:
    """`tokens` comes from the thread or batch when the index uses neighbouring entries; a
    lone version (revise, reactivate) is indexed alone and is nobody's neighbour."""
    if tokens is None:
        alone = IndexSource(
            kind=source.kind,
            text=source.text,
            metadata=source.metadata,
            occurred_at=source.occurred_at,
        )
        (tokens,) = fts_tokens([alone], config.index, config.analyzer)
    return NewVersion(
        entry_id=entry_id,
        entry_version_id=uuid.uuid4().hex,
        version=version,
        kind=source.kind,
        text=source.text,
        metadata=dict(source.metadata),
        index_tokens=tokens,
        thread=source.thread,
        occurred_at=source.occurred_at,
    )


async def remember_many(
    service: MemoryService, scope_id: str, requests: Sequence[RememberMemoryRequest]
) -> MemoryWriteResult:
    if not requests:
        raise MemoryValidationError("remember_many needs at least one entry")
    check_batch_size(len(requests), service.config.max_batch_entries)
    expected = {r.expected_revision for r in requests}
    if len(expected) > 1:
        raise MemoryValidationError("entries of one batch must share one expected_revision")
    claim = claim_for("remember", requests)

    sources = [source_of(request) for request in requests]
    planned: list[WriteIndex] = []

    async def plan() -> list[PlannedChange]:
        # Read under the scope lock, so the tail is the one this commit extends.
        index = await service.threads.plan(scope_id, sources)
        planned[:] = [index]
        return [
            PlannedChange(
                op="add",
                new=new_version(service.config, uuid.uuid4().hex, 1, source, tokens=tokens),
                reason=r.reason,
            )
            for r, source, tokens in zip(requests, sources, index.tokens, strict=True)
        ]

    return await write_planned(
        service, scope_id, requests[0].expected_revision, plan, claim, lambda: planned[0]
    )


async def _cited_latest(
    service: MemoryService, scope_id: str, citation: MemoryCitation
) -> StoredVersion:
    if citation.memory_ref.scope_id != scope_id:
        raise NotFoundError("the citation belongs to another scope")
    # A write acts on what the citation names, so it must name what `get` resolves: an
    # erased version is 410, and a version of another entry, or a revision before the
    # version or past the head (a made-up citation), names nothing (404).
    if await service.get(scope_id, citation) is None:
        raise NotFoundError(
            f"the citation names no version of entry {citation.entry_id!r} in this scope "
            f"at revision {citation.memory_ref.revision}"
        )
    latest = await service.store.latest_version(scope_id, citation.entry_id)
    if latest is None:
        raise NotFoundError(f"entry {citation.entry_id!r} does not exist in this scope")
    if latest.entry_version_id != citation.entry_version_id:
        raise RevisionConflictError(
            f"entry {citation.entry_id!r} is at version {latest.version}; "
            "the citation names an older version",
            expected=None,
            actual=None,
        )
    return latest


async def revise(
    service: MemoryService, scope_id: str, request: ReviseMemoryRequest
) -> MemoryWriteResult:
    cited: list[StoredVersion] = []

    async def plan() -> list[PlannedChange]:
        current = await _cited_latest(service, scope_id, request.citation)
        if current.removed_revision is not None:
            raise NotFoundError(f"entry {current.entry_id!r} is retired; reactivate it first")
        cited[:] = [current]
        new = new_version(
            service.config,
            current.entry_id,
            current.version + 1,
            IndexSource(
                kind=request.kind or current.kind,
                text=request.text,
                metadata=current.metadata if request.metadata is None else request.metadata,
                thread=current.thread,
                occurred_at=current.occurred_at,
            ),
        )
        return [
            PlannedChange(
                op="revise",
                new=new,
                previous_entry_version_id=current.entry_version_id,
                reason=request.reason,
            )
        ]

    return await _write_one(service, scope_id, request, plan, lambda: cited)


async def retire(
    service: MemoryService, scope_id: str, request: RetireMemoryRequest
) -> MemoryWriteResult:
    cited: list[StoredVersion] = []

    async def plan() -> list[PlannedChange]:
        current = await _cited_latest(service, scope_id, request.citation)
        if current.removed_revision is not None:
            raise NotFoundError(f"entry {current.entry_id!r} is already retired")
        cited[:] = [current]
        return [
            PlannedChange(
                op="retire",
                previous_entry_version_id=current.entry_version_id,
                reason=request.reason,
            )
        ]

    return await _write_one(service, scope_id, request, plan, lambda: cited)


async def reactivate(
    service: MemoryService, scope_id: str, request: ReactivateMemoryRequest
) -> MemoryWriteResult:
    async def plan() -> list[PlannedChange]:
        current = await _cited_latest(service, scope_id, request.citation)
        if current.removed_revision is None:
            raise MemoryValidationError(f"entry {current.entry_id!r} is active already")
        new = new_version(service.config, current.entry_id, current.version + 1, source_of(current))
        return [PlannedChange(op="reactivate", new=new, reason=request.reason)]

    return await _write_one(service, scope_id, request, plan)


async def write_planned(
    service: MemoryService,
    scope_id: str,
    expected: int | None,
    plan: Planner,
    claim: IdempotencyClaim | None,
    planned: Callable[[], WriteIndex] | None = None,
    removed: Callable[[], Sequence[StoredVersion]] | None = None,
) -> MemoryWriteResult:
    """Commit `plan`, then index what it wrote. `planned` gives the thread or batch index the
    plan built, whose neighbours the new versions change; without it they change no other.
    `removed` gives the versions the plan took out of their sequence (retire, revise), whose
    former neighbours are re-derived."""
    store = service.store
    committed = await commit_planned(
        store, service.lock_of(scope_id), scope_id, expected, plan, claim
    )
    if isinstance(committed, IdempotentWrite):
        return await replay(store, scope_id, committed, await service.indexer.pending(scope_id))
    revision, news, keys = committed
    await service.profiles.record(scope_id, revision)
    if planned is None:  # revise, reactivate: one version, indexed alone
        pending = await service.indexer.embed_new(scope_id, list(zip(keys, news, strict=True)))
    else:
        index = planned()
        await service.threads.rewrite_neighbours(scope_id, index)
        new = list(zip(keys, index.embeddings, strict=True))
        pending = await service.indexer.embed_items(scope_id, new, index.re_embed)
        # Only versions in a sequence hold a neighbour's words (a thread-less entry of an
        # ungrouped batch holds none), so only those can need it, and the rest pay no read.
        grouped = service.config.index.context_group_key is not None
        sequenced = [k for k, v in zip(keys, news, strict=True) if v.thread or grouped]
        widened = [key for key, _ in (*index.rewrites, *index.re_embed)]
        if sequenced or widened:
            await _settle(service, scope_id, revision, [*sequenced, *widened])
    if removed is not None:
        await _close_gaps(service, scope_id, removed())
    stored = await store.fetch_versions(scope_id, keys)
    entries = tuple(entry_from_stored(scope_id, revision, stored[key]) for key in keys)
    return MemoryWriteResult(
        memory_ref=MemoryRef(scope_id=scope_id, revision=revision),
        entries=entries,
        vectors_pending=pending,
    )


async def _write_one(
    service: MemoryService,
    scope_id: str,
    request: ReviseMemoryRequest | RetireMemoryRequest | ReactivateMemoryRequest,
    plan: Planner,
    removed: Callable[[], Sequence[StoredVersion]] | None = None,
) -> MemoryWriteResult:
    """A single-entry write: its own compare-and-swap and idempotency claim, no batch index."""
    claim = claim_for(type(request).__name__, [request])
    return await write_planned(
        service, scope_id, request.expected_revision, plan, claim, removed=removed
    )


async def _settle(
    service: MemoryService, scope_id: str, revision: int, keys: Sequence[int]
) -> None:
    """Re-derive what this write indexed after its commit while an erasure has committed since
    (indexing.erasure_races): derived data, so a failure leaves the write standing."""
    config = service.config
    try:
        await settle_write(service.indexer, config.index, config.analyzer, scope_id, revision, keys)
    except Exception as exc:
        log.error(
            "re-deriving %d versions after an erasure that committed meanwhile failed (%s); "
            "run `powercontext reindex --rebuild` so that none keeps an erased turn's words",
            len(keys),
            failure_summary(exc),
        )


async def _close_gaps(
    service: MemoryService, scope_id: str, removed: Sequence[StoredVersion]
) -> None:
    """The former neighbours of `removed`: derived data, so a failure leaves the write standing
    (their index keeps the removed words until `reindex --rebuild`)."""
    config = service.config
    try:
        await rederive_around(service.indexer, config.index, config.analyzer, scope_id, removed)
    except Exception as exc:
        log.warning(
            "re-deriving the neighbours of %d removed versions failed after commit (%s)",
            len(removed),
            failure_summary(exc),
        )
