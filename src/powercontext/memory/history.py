"""The history of one entry: every change that touched it and every version it had.

Built from the scope's change log, so it works on any Memory that offers `head`, `changes` and
`get`: the runtime's ScopedMemory and the SDK's scoped client alike (the inspector, the CLI and
the MCP tools all use this one function). The log has no index by entry, so the lookup scans
it, bounded by MAX_HISTORY_CHANGES; `complete` says whether the whole log was read.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict

from powercontext.memory.errors import NotFoundError
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
    """Every change of one entry, oldest first, and each version it wrote."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_ref: MemoryRef
    entry_id: str
    changes: tuple[MemoryChange, ...]
    versions: tuple[EntryVersionRecord, ...]
    complete: bool


async def entry_history(memory: HistoryReader, entry_id: str) -> MemoryEntryHistory:
    """Raises NotFoundError when the scope is empty or no change names `entry_id`."""
    head = await memory.head()
    changes: list[MemoryChange] = []
    since, scanned = 0, 0
    while head is not None and scanned < MAX_HISTORY_CHANGES:
        page = await memory.changes(since, limit=_PAGE)
        if not page.changes:
            break
        scanned += len(page.changes)
        changes += [change for change in page.changes if change.entry_id == entry_id]
        since = page.next_since_revision
    if head is None or not changes:
        raise NotFoundError("no such entry in this scope")
    versions: list[EntryVersionRecord] = []
    seen: set[str] = set()
    for change in changes:
        version_id = change.entry_version_id
        if change.op == "retire" or version_id in seen:
            continue
        seen.add(version_id)
        cited = MemoryCitation(memory_ref=head, entry_id=entry_id, entry_version_id=version_id)
        entry = await memory.get(cited)
        if entry is not None:
            versions.append(EntryVersionRecord(entry=entry, written_by=change))
    return MemoryEntryHistory(
        memory_ref=head,
        entry_id=entry_id,
        changes=tuple(changes),
        versions=tuple(versions),
        complete=scanned < MAX_HISTORY_CHANGES,
    )
