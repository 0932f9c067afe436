"""Entry versions as the domain hands them out, and one entry looked up by its id.

`entry_at` answers "what did this entry say at revision N" (the head by default) from the
entry's own versions, without scanning the change log.
"""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.memory.errors import NotFoundError
from powercontext.memory.models import MemoryCitation, MemoryEntry, MemoryRef
from powercontext.memory.ports import MemoryStore, StoredVersion


def entry_from_stored(scope_id: str, revision: int, stored: StoredVersion) -> MemoryEntry:
    ref = MemoryRef(scope_id=scope_id, revision=revision)
    return MemoryEntry(
        citation=MemoryCitation(
            memory_ref=ref, entry_id=stored.entry_id, entry_version_id=stored.entry_version_id
        ),
        entry_id=stored.entry_id,
        entry_version_id=stored.entry_version_id,
        version=stored.version,
        kind=stored.kind,
        text=stored.text,
        metadata=stored.metadata,
        created_at=stored.created_at,
        active=stored.removed_revision is None,
        thread=stored.thread,
        occurred_at=stored.event_time,
    )


async def resolve_revision(store: MemoryStore, scope_id: str, revision: int | None) -> int:
    """`revision`, or the head when None; NotFoundError for an empty scope or an unknown one."""
    head = await store.head(scope_id)
    if head is None:
        raise NotFoundError(f"scope {scope_id!r} has no revision yet")
    at = head if revision is None else revision
    if not 1 <= at <= head:
        raise NotFoundError(f"scope {scope_id!r} has no revision {at}")
    return at


def active_version(versions: Sequence[StoredVersion], revision: int) -> StoredVersion | None:
    return next((v for v in reversed(versions) if v.active_at(revision)), None)


async def entry_at(
    store: MemoryStore, scope_id: str, entry_id: str, revision: int | None = None
) -> MemoryEntry:
    """The version of `entry_id` active at `revision` (default the head), cited there.

    NotFoundError when the entry does not exist, was not yet written, or is retired then."""
    at = await resolve_revision(store, scope_id, revision)
    versions = await store.entry_versions(scope_id, entry_id)
    if not versions:
        raise NotFoundError(f"entry {entry_id!r} does not exist in this scope")
    found = active_version(versions, at)
    if found is None:
        raise NotFoundError(f"entry {entry_id!r} has no active version at revision {at}")
    return entry_from_stored(scope_id, at, found)
