"""Tombstones: what a read of an erased entry or version answers instead of its text.

An erasure (`forget`) deletes every version of an entry but keeps, per version, its ids, the
revision that erased it and who did. A citation of such a version, or a lookup of the entry
by id, raises ErasedError (HTTP 410 `erased`) from them; it never resolves to content.
"""

from __future__ import annotations

from powercontext.memory.errors import ErasedError
from powercontext.memory.ports import MemoryStore, Tombstone, TombstoneQuery


def erased_error(tombstone: Tombstone, *, version_cited: bool) -> ErasedError:
    what = (
        f"entry version {tombstone.entry_version_id!r} of entry {tombstone.entry_id!r}"
        if version_cited
        else f"entry {tombstone.entry_id!r}"
    )
    return ErasedError(
        f"{what} was erased at revision {tombstone.erased_revision}",
        entry_id=tombstone.entry_id,
        entry_version_id=tombstone.entry_version_id if version_cited else None,
        erased_revision=tombstone.erased_revision,
    )


async def raise_if_version_erased(store: MemoryStore, scope_id: str, entry_version_id: str) -> None:
    found = await store.tombstones(TombstoneQuery(scope_id, entry_version_id=entry_version_id))
    if found:
        raise erased_error(found[0], version_cited=True)


async def raise_if_entry_erased(store: MemoryStore, scope_id: str, entry_id: str) -> None:
    found = await store.tombstones(TombstoneQuery(scope_id, entry_id=entry_id))
    if found:
        raise erased_error(found[-1], version_cited=False)
