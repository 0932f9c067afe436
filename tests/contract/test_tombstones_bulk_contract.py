"""Contract: the tombstones of several entries in one read (an import batch asks this way),
the same answer as one read per entry, on every backend."""

from __future__ import annotations

from powercontext.memory.ports import CommitRequest, ErasureRequest, MemoryStore, TombstoneQuery

from .builders import add

SCOPE = "bulk-stones"


async def test_several_entries_tombstones_come_in_one_read(store: MemoryStore) -> None:
    first = await store.commit(CommitRequest(SCOPE, None, [add(f"entry {i}") for i in range(4)]))
    versions = await store.fetch_versions(SCOPE, first.keys)
    ids = sorted(v.entry_id for v in versions.values())
    erased = await store.erase(
        ErasureRequest(SCOPE, first.revision, ids[:2], actor="ops", reason=None)
    )
    asked = (ids[1], "never-written", ids[0], ids[2], "a\x00b")

    found = await store.tombstones(TombstoneQuery(SCOPE, entry_ids=asked))

    one_by_one = [
        stone
        for i in sorted(ids[:2])
        for stone in await store.tombstones(TombstoneQuery(SCOPE, entry_id=i))
    ]
    assert found == one_by_one
    assert {stone.entry_id for stone in found} == set(ids[:2])
    assert all(stone.erased_revision == erased.revision for stone in found)
    assert await store.tombstones(TombstoneQuery(SCOPE, entry_ids=())) == []
    assert await store.tombstones(TombstoneQuery("other-scope", entry_ids=asked)) == []
