"""The history of one entry: every change that touched it and every version it had.

Built from the scope's change log, so it works on any Memory that offers `head`, `changes` and
`get`: the runtime's ScopedMemory and the SDK's scoped client alike (the inspector, the CLI and
the MCP tools all use this one function). The log has no index by entry, so the lookup scans
it, bounded by MAX_HISTORY_CHANGES; `complete` says whether the whole log was read.

`revision` reads the history as it stood at that revision (default the head): later changes
are left out and `active_version` is the version active then. Newest first throughout.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict

from powercontext.memory.errors import ErasedError, NotFoundError
from powercontext.memory.models import (
    MemoryChange,
    MemoryChangesPage,
    MemoryCitation,
    MemoryEntry,
    MemoryRef,
)

MAX_HISTORY_CHANGES = 100_000
"""How many change-log rows one history lookup reads at most."""
_PAGE = 10_000


class HistoryReader(Protocol):
    async def head(self) -> MemoryRef | None: ...

    async def changes(self, since_revision: int = 0, *, limit: int = 1000) -> MemoryChangesPage: ...

    async def get(self, citation: MemoryCitation) -> MemoryEntry | None: ...


class EntryVersionRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    entry: MemoryEntry
    written_by: MemoryChange


class MemoryEntryHistory(BaseModel):
    """Every change of one entry up to `memory_ref`, newest first, each version it wrote, and
    the version active at `memory_ref` (None when the entry is retired there)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_ref: MemoryRef
    entry_id: str
    changes: tuple[MemoryChange, ...]
    versions: tuple[EntryVersionRecord, ...]
    active_version: MemoryEntry | None = None
    complete: bool


async def entry_history(
    memory: HistoryReader, entry_id: str, revision: int | None = None
) -> MemoryEntryHistory:
    """Raises NotFoundError when the scope is empty, `revision` is past the head, or no change
    up to it names `entry_id`."""
    head = await memory.head()
    if head is None:
        raise NotFoundError("no such entry in this scope")
    at = head.revision if revision is None else revision
    if not 1 <= at <= head.revision:
        raise NotFoundError(f"scope {head.scope_id!r} has no revision {at}")
    ref = MemoryRef(scope_id=head.scope_id, revision=at)
    changes: list[MemoryChange] = []
    since, scanned = 0, 0
    while since < at and scanned < MAX_HISTORY_CHANGES:
        page = await memory.changes(since, limit=_PAGE)
        if not page.changes:
            break
        scanned += len(page.changes)
        changes += [c for c in page.changes if c.entry_id == entry_id and c.revision <= at]
        since = page.next_since_revision
    if not changes:
        raise NotFoundError("no such entry in this scope")
    changes.reverse()
    versions: list[EntryVersionRecord] = []
    seen: set[str] = set()
    for change in changes:
        version_id = change.entry_version_id
        if change.op in ("retire", "forget") or version_id in seen:
            continue
        seen.add(version_id)
        cited = MemoryCitation(memory_ref=ref, entry_id=entry_id, entry_version_id=version_id)
        try:
            entry = await memory.get(cited)
        except ErasedError:
            # An erased version keeps its changes (ids only), never its content.
            continue
        if entry is not None:
            versions.append(EntryVersionRecord(entry=entry, written_by=change))
    # The newest change decides: a retire or forget leaves no active version, any other op
    # wrote it.
    active = None
    if changes[0].op not in ("retire", "forget") and versions:
        active = versions[0].entry
    return MemoryEntryHistory(
        memory_ref=ref,
        entry_id=entry_id,
        changes=tuple(changes),
        versions=tuple(versions),
        active_version=active,
        complete=scanned < MAX_HISTORY_CHANGES,
    )
