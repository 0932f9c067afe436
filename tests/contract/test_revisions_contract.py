"""Contract: every revision keeps its complete active set; the change log pages by revision."""

from __future__ import annotations

from powercontext.memory.ports import CommitRequest, MemoryStore, StoredVersion, VersionPage

from .builders import add, reactivate, retire, revise


async def _active(store: MemoryStore, scope: str, revision: int) -> list[StoredVersion]:
    return await store.list_versions(VersionPage(scope, revision, after_key=None, limit=1000))


async def test_list_versions_at_old_revisions_shows_their_active_sets(store: MemoryStore) -> None:
    r1 = await store.commit(
        CommitRequest("s", None, [add("a", entry_id="a"), add("b", entry_id="b")])
    )
    fetched = await store.fetch_versions("s", r1.keys)
    va, vb = fetched[r1.keys[0]], fetched[r1.keys[1]]
    r2 = await store.commit(CommitRequest("s", 1, [revise(va, "a two"), add("c", entry_id="c")]))
    await store.commit(CommitRequest("s", 2, [retire(vb)]))
    a2 = await store.latest_version("s", "a")
    assert a2 is not None
    await store.commit(CommitRequest("s", 3, [retire(a2)]))
    retired_a = await store.latest_version("s", "a")
    assert retired_a is not None
    await store.commit(CommitRequest("s", 4, [reactivate(retired_a)]))

    def texts(versions: list[StoredVersion]) -> list[str]:
        return [f"{v.entry_id}:{v.version}" for v in versions]

    assert texts(await _active(store, "s", 1)) == ["a:1", "b:1"]
    assert texts(await _active(store, "s", 2)) == ["b:1", "a:2", "c:1"]
    assert texts(await _active(store, "s", 3)) == ["a:2", "c:1"]
    assert texts(await _active(store, "s", 4)) == ["c:1"]
    assert texts(await _active(store, "s", 5)) == ["c:1", "a:3"]
    assert await _active(store, "s", 0) == []
    keys = [v.key for v in await _active(store, "s", 2)]
    assert keys == sorted(keys) and r2.keys[0] in keys


async def test_list_versions_pages_by_key(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add(f"entry {i}") for i in range(25)]))
    seen: list[int] = []
    after: int | None = None
    while True:
        page = await store.list_versions(VersionPage("s", 1, after_key=after, limit=10))
        if not page:
            break
        assert len(page) <= 10
        seen.extend(v.key for v in page)
        after = page[-1].key
    assert seen == list(result.keys)
    assert await store.list_versions(VersionPage("s", 1, after_key=result.keys[-1], limit=10)) == []


async def test_list_versions_pages_skip_retired_versions(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add(f"entry {i}") for i in range(6)]))
    versions = await store.fetch_versions("s", result.keys)
    await store.commit(CommitRequest("s", 1, [retire(versions[k]) for k in result.keys[1:5]]))
    page = await store.list_versions(VersionPage("s", 2, after_key=None, limit=1))
    assert [v.key for v in page] == [result.keys[0]]
    page = await store.list_versions(VersionPage("s", 2, after_key=page[-1].key, limit=1))
    assert [v.key for v in page] == [result.keys[5]]


async def test_changes_record_every_op_in_order(store: MemoryStore) -> None:
    r1 = await store.commit(CommitRequest("s", None, [add("a", entry_id="a", reason="learned")]))
    va = (await store.fetch_versions("s", r1.keys))[r1.keys[0]]
    await store.commit(CommitRequest("s", 1, [revise(va, "a two", reason="fix")]))
    a2 = await store.latest_version("s", "a")
    assert a2 is not None
    await store.commit(CommitRequest("s", 2, [retire(a2, reason="gone")]))
    retired = await store.latest_version("s", "a")
    assert retired is not None
    r4 = await store.commit(CommitRequest("s", 3, [reactivate(retired)]))
    a3 = await store.latest_version("s", "a")
    assert a3 is not None

    changes = await store.changes("s", 0, limit=100)
    assert [(c.revision, c.op) for c in changes] == [
        (1, "add"),
        (2, "revise"),
        (3, "retire"),
        (4, "reactivate"),
    ]
    add_c, revise_c, retire_c, reactivate_c = changes
    assert add_c.entry_version_id == va.entry_version_id and add_c.reason == "learned"
    assert add_c.previous_entry_version_id is None
    assert revise_c.entry_version_id == a2.entry_version_id
    assert revise_c.previous_entry_version_id == va.entry_version_id and revise_c.reason == "fix"
    assert retire_c.entry_id == "a" and retire_c.entry_version_id == a2.entry_version_id
    assert retire_c.previous_entry_version_id == a2.entry_version_id
    assert retire_c.reason == "gone"
    assert reactivate_c.entry_version_id == a3.entry_version_id
    assert reactivate_c.created_at == r4.created_at
    assert all(c.entry_id == "a" for c in changes)
    assert [c.revision for c in await store.changes("s", 2, limit=100)] == [3, 4]
    assert await store.changes("s", 4, limit=100) == []


async def test_changes_keep_the_order_of_the_plan(store: MemoryStore) -> None:
    plan = [add(f"entry {i}", entry_id=f"e{i}") for i in range(7)]
    await store.commit(CommitRequest("s", None, plan))
    changes = await store.changes("s", 0, limit=100)
    assert [c.entry_id for c in changes] == [f"e{i}" for i in range(7)]


async def test_changes_pages_never_split_a_revision(store: MemoryStore) -> None:
    await store.commit(CommitRequest("s", None, [add("one")]))  # revision 1: 1 change
    await store.commit(
        CommitRequest("s", 1, [add(f"two {i}") for i in range(3)])
    )  # revision 2: 3 changes
    await store.commit(
        CommitRequest("s", 2, [add(f"three {i}") for i in range(5)])
    )  # revision 3: 5 changes
    await store.commit(CommitRequest("s", 3, [add("four")]))  # revision 4: 1 change

    page = await store.changes("s", 0, limit=3)
    assert [c.revision for c in page] == [1]  # revision 2 would not fit whole
    page = await store.changes("s", 0, limit=4)
    assert [c.revision for c in page] == [1, 2, 2, 2]
    page = await store.changes("s", 2, limit=2)
    assert [c.revision for c in page] == [3] * 5  # one revision larger than the limit: whole
    page = await store.changes("s", 2, limit=6)
    assert [c.revision for c in page] == [3] * 5 + [4]

    collected = []
    since = 0
    while page := await store.changes("s", since, limit=4):
        collected.extend(page)
        since = page[-1].revision
    assert [c.revision for c in collected] == [1, 2, 2, 2, 3, 3, 3, 3, 3, 4]


async def test_changes_of_scopes_are_separate(store: MemoryStore) -> None:
    await store.commit(CommitRequest("a", None, [add("in a")]))
    await store.commit(CommitRequest("b", None, [add("in b"), add("also b")]))
    assert len(await store.changes("a", 0, limit=10)) == 1
    assert len(await store.changes("b", 0, limit=10)) == 2
