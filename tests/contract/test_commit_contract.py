"""Contract: commit is an atomic compare-and-swap on the scope head; reads of versions."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from powercontext.memory.errors import MemoryValidationError, RevisionConflictError
from powercontext.memory.ports import (
    CommitRequest,
    FtsQuery,
    MemoryStore,
    PlannedChange,
    VersionPage,
)

from .builders import add, reactivate, retire, revise, version


async def test_empty_store_has_no_scopes_and_no_head(store: MemoryStore) -> None:
    assert await store.scope_ids() == []
    assert await store.head("nobody") is None
    assert await store.latest_version("nobody", "e") is None
    assert await store.get_version("nobody", "v") is None
    assert await store.fetch_versions("nobody", [1, 2]) == {}
    assert await store.list_versions(VersionPage("nobody", 1, after_key=None, limit=10)) == []
    assert await store.changes("nobody", 0, limit=10) == []


async def test_first_commit_creates_revision_one_and_returns_keys_in_order(
    store: MemoryStore,
) -> None:
    before = datetime.now(UTC) - timedelta(seconds=5)
    changes = [add(f"entry number {i}") for i in range(5)]
    result = await store.commit(CommitRequest("s", None, changes))
    assert result.revision == 1
    assert await store.head("s") == 1
    assert await store.scope_ids() == ["s"]
    assert len(result.keys) == 5 and list(result.keys) == sorted(result.keys)
    assert len(set(result.keys)) == 5
    assert result.created_at.tzinfo is not None and result.created_at >= before
    fetched = await store.fetch_versions("s", result.keys)
    for key, change in zip(result.keys, changes, strict=True):
        assert change.new is not None
        stored = fetched[key]
        assert stored.key == key
        assert stored.entry_id == change.new.entry_id
        assert stored.entry_version_id == change.new.entry_version_id
        assert stored.text == change.new.text
        assert stored.kind == "fact" and stored.version == 1
        assert stored.metadata == {"source": "test"}
        assert stored.added_revision == 1 and stored.removed_revision is None
        assert stored.created_at == result.created_at


async def test_cas_accepts_the_current_head_and_rejects_a_stale_one(store: MemoryStore) -> None:
    await store.commit(CommitRequest("s", None, [add("one")]))
    second = await store.commit(CommitRequest("s", 1, [add("two")]))
    assert second.revision == 2
    with pytest.raises(RevisionConflictError) as stale:
        await store.commit(CommitRequest("s", 1, [add("stale")]))
    assert stale.value.expected == 1 and stale.value.actual == 2
    with pytest.raises(RevisionConflictError):
        await store.commit(CommitRequest("s", None, [add("scope exists already")]))
    with pytest.raises(RevisionConflictError):
        await store.commit(CommitRequest("s", 7, [add("from the future")]))
    with pytest.raises(RevisionConflictError):
        await store.commit(CommitRequest("fresh", 1, [add("scope has no revision")]))
    assert await store.head("s") == 2
    assert await store.head("fresh") is None
    assert len(await store.list_versions(VersionPage("s", 2, after_key=None, limit=100))) == 2


async def test_keys_grow_across_commits_and_scopes(store: MemoryStore) -> None:
    a = await store.commit(CommitRequest("a", None, [add("a1"), add("a2")]))
    b = await store.commit(CommitRequest("b", None, [add("b1")]))
    c = await store.commit(CommitRequest("a", 1, [add("a3")]))
    assert max(a.keys) < min(b.keys) < min(c.keys)
    assert await store.scope_ids() == ["a", "b"]


async def test_scopes_are_isolated(store: MemoryStore) -> None:
    a = await store.commit(CommitRequest("a", None, [add("shared words", entry_id="same-entry")]))
    b = await store.commit(CommitRequest("b", None, [add("shared words", entry_id="same-entry")]))
    assert await store.fetch_versions("b", a.keys) == {}
    assert set(await store.fetch_versions("b", [*a.keys, *b.keys])) == set(b.keys)
    latest_a = await store.latest_version("a", "same-entry")
    assert latest_a is not None and latest_a.key == a.keys[0]
    assert await store.get_version("b", latest_a.entry_version_id) is None


async def test_revise_retire_and_reactivate(store: MemoryStore) -> None:
    first = await store.commit(CommitRequest("s", None, [add("original text", entry_id="e")]))
    v1 = (await store.fetch_versions("s", first.keys))[first.keys[0]]
    second = await store.commit(CommitRequest("s", 1, [revise(v1, "revised text", reason="typo")]))
    v2 = await store.latest_version("s", "e")
    assert v2 is not None and v2.key == second.keys[0]
    assert v2.version == 2 and v2.text == "revised text" and v2.removed_revision is None
    old = await store.get_version("s", v1.entry_version_id)
    assert old is not None and old.removed_revision == 2 and old.text == "original text"

    third = await store.commit(CommitRequest("s", 2, [retire(v2, reason="obsolete")]))
    assert third.keys == ()
    retired = await store.latest_version("s", "e")
    assert retired is not None and retired.key == v2.key and retired.removed_revision == 3

    fourth = await store.commit(CommitRequest("s", 3, [reactivate(retired)]))
    v3 = await store.latest_version("s", "e")
    assert v3 is not None and v3.key == fourth.keys[0] and v3.version == 3
    assert v3.text == "revised text" and v3.removed_revision is None


async def test_retiring_a_version_that_is_not_active_conflicts(store: MemoryStore) -> None:
    first = await store.commit(CommitRequest("s", None, [add("text", entry_id="e"), add("other")]))
    v1 = (await store.fetch_versions("s", first.keys))[first.keys[0]]
    await store.commit(CommitRequest("s", 1, [revise(v1, "newer")]))
    for stale in (retire(v1), revise(v1, "fork of an old version")):
        with pytest.raises(RevisionConflictError):
            await store.commit(CommitRequest("s", 2, [stale]))
    ghost = PlannedChange(op="retire", previous_entry_version_id="no-such-version")
    with pytest.raises(RevisionConflictError):
        await store.commit(CommitRequest("s", 2, [ghost]))
    assert await store.head("s") == 2


async def test_a_conflict_writes_nothing(store: MemoryStore) -> None:
    first = await store.commit(CommitRequest("s", None, [add("kept", entry_id="e")]))
    v1 = (await store.fetch_versions("s", first.keys))[first.keys[0]]
    await store.commit(CommitRequest("s", 1, [retire(v1)]))
    doomed = [add("must not appear"), add("nor this"), retire(v1)]
    with pytest.raises(RevisionConflictError):
        await store.commit(CommitRequest("s", 2, doomed))
    assert await store.head("s") == 2
    assert await store.list_versions(VersionPage("s", 2, after_key=None, limit=10)) == []
    assert len(await store.changes("s", 0, limit=100)) == 2
    assert await store.fts_candidates(FtsQuery("s", 2, ["appear"], limit=10)) == []
    # The keys a failed commit would have used are not a gap the next commit trips over.
    after = await store.commit(CommitRequest("s", 2, [add("next")]))
    assert after.revision == 3 and len(after.keys) == 1


async def test_retiring_the_same_version_twice_in_one_commit_conflicts(
    store: MemoryStore,
) -> None:
    first = await store.commit(CommitRequest("s", None, [add("text")]))
    v1 = (await store.fetch_versions("s", first.keys))[first.keys[0]]
    with pytest.raises(RevisionConflictError):
        await store.commit(CommitRequest("s", 1, [retire(v1), retire(v1)]))
    assert await store.head("s") == 1


async def test_an_entry_has_at_most_one_active_version(store: MemoryStore) -> None:
    await store.commit(CommitRequest("s", None, [add("text", entry_id="e")]))
    second_active = PlannedChange(op="add", new=version("again", entry_id="e", number=2))
    with pytest.raises(RevisionConflictError):
        await store.commit(CommitRequest("s", 1, [second_active]))
    duplicate_number = PlannedChange(op="add", new=version("dup", entry_id="e", number=1))
    with pytest.raises(RevisionConflictError):
        await store.commit(CommitRequest("s", 1, [duplicate_number]))
    assert await store.head("s") == 1


@pytest.mark.parametrize(
    "change",
    [
        PlannedChange(op="add"),
        PlannedChange(op="revise", new=version("x")),
        PlannedChange(op="retire"),
        PlannedChange(op="retire", new=version("x"), previous_entry_version_id="v"),
        PlannedChange(op="add", new=version("x"), previous_entry_version_id="v"),
        PlannedChange(op="explode", new=version("x")),  # type: ignore[arg-type]
    ],
    ids=[
        "add-without-new",
        "revise-without-previous",
        "retire-without-previous",
        "retire-with-new",
        "add-with-previous",
        "unknown-op",
    ],
)
async def test_malformed_plans_are_rejected(store: MemoryStore, change: PlannedChange) -> None:
    with pytest.raises(MemoryValidationError):
        await store.commit(CommitRequest("s", None, [change]))
    assert await store.head("s") is None


async def test_an_empty_commit_is_rejected(store: MemoryStore) -> None:
    with pytest.raises(MemoryValidationError):
        await store.commit(CommitRequest("s", None, []))


async def test_revise_must_name_a_version_of_the_same_entry(store: MemoryStore) -> None:
    first = await store.commit(
        CommitRequest("s", None, [add("a", entry_id="a"), add("b", entry_id="b")])
    )
    va = (await store.fetch_versions("s", first.keys))[first.keys[0]]
    crossed = PlannedChange(
        op="revise",
        new=version("b v2", entry_id="b", number=2),
        previous_entry_version_id=va.entry_version_id,
    )
    with pytest.raises(MemoryValidationError):
        await store.commit(CommitRequest("s", 1, [crossed]))
    assert await store.head("s") == 1


async def test_metadata_and_text_round_trip(store: MemoryStore) -> None:
    metadata = {
        "source_ids": ["d1", "d2"],
        "date": "2024-05-01",
        "nested": {"n": 1.5, "ok": True},
        "none": None,
        "unicode": "東京 😀",
    }
    text = "Café 東京 😀 with \"quotes\" and 'apostrophes' -- ; DROP TABLE x; \\ backslash"
    result = await store.commit(
        CommitRequest("s", None, [add(text, metadata=metadata, kind="decision")])
    )
    stored = (await store.fetch_versions("s", result.keys))[result.keys[0]]
    assert stored.text == text and stored.metadata == metadata and stored.kind == "decision"


async def test_a_batch_of_ten_thousand_changes_is_one_fast_revision(store: MemoryStore) -> None:
    changes = [add(f"batch entry {i} about topic{i % 97}") for i in range(10_000)]
    started = time.perf_counter()
    result = await store.commit(CommitRequest("big", None, changes))
    elapsed = time.perf_counter() - started
    assert result.revision == 1 and len(result.keys) == 10_000
    assert len(set(result.keys)) == 10_000
    page = await store.list_versions(VersionPage("big", 1, after_key=None, limit=20_000))
    assert [v.key for v in page] == list(result.keys)
    assert elapsed < 10_000 / 3_000, f"{10_000 / elapsed:.0f} entries/s"
    hits = await store.fts_candidates(FtsQuery("big", 1, ["topic5"], limit=500))
    assert len(hits) == len([i for i in range(10_000) if i % 97 == 5])
