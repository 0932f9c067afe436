"""Contract: data survives close and reopen; two stores on the same data see each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.memory.errors import RevisionConflictError
from powercontext.memory.ports import CommitRequest, FtsQuery, VectorQuery, VersionPage

from .backends import Backend
from .builders import add, retire, unit


def _needs_persistence(backend: Backend) -> None:
    if not backend.persistent:
        pytest.skip("this backend keeps nothing after close")


async def test_reopening_gives_the_same_data(backend: Backend, tmp_path: Path) -> None:
    _needs_persistence(backend)
    first = await backend.open(tmp_path)
    r1 = await first.commit(
        CommitRequest("s", None, [add("persistent harbor", metadata={"n": 1}), add("b")])
    )
    versions = await first.fetch_versions("s", r1.keys)
    await first.commit(CommitRequest("s", 1, [retire(versions[r1.keys[1]], reason="done")]))
    await first.put_vectors("s", "p", [(r1.keys[0], unit(1, 0))])
    assert len(await first.vector_candidates(VectorQuery("s", 2, "p", unit(1, 0), limit=5))) == 1
    await first.close()

    again = await backend.open(tmp_path)
    try:
        assert await again.scope_ids() == ["s"]
        assert await again.head("s") == 2
        stored = await again.fetch_versions("s", r1.keys)
        assert stored[r1.keys[0]] == versions[r1.keys[0]]
        assert stored[r1.keys[1]].removed_revision == 2
        assert stored[r1.keys[1]].text == versions[r1.keys[1]].text
        assert [
            v.key for v in await again.list_versions(VersionPage("s", 1, after_key=None, limit=9))
        ] == [*r1.keys]
        assert [
            v.key for v in await again.list_versions(VersionPage("s", 2, after_key=None, limit=9))
        ] == [r1.keys[0]]
        assert [c.op for c in await again.changes("s", 0, limit=10)] == ["add", "add", "retire"]
        fts = await again.fts_candidates(FtsQuery("s", 2, ["harbor"], limit=5))
        assert [c.key for c in fts] == [r1.keys[0]]
        found = await again.vector_candidates(VectorQuery("s", 2, "p", unit(1, 0), limit=5))
        assert [c.key for c in found] == [r1.keys[0]]
        assert await again.missing_vector_count("s", 2, "p") == 0
        with pytest.raises(RevisionConflictError):
            await again.commit(CommitRequest("s", 1, [add("stale after reopen")]))
        r3 = await again.commit(CommitRequest("s", 2, [add("after reopen")]))
        assert r3.revision == 3 and min(r3.keys) > max(r1.keys)
    finally:
        await again.close()


async def test_two_stores_on_the_same_data_see_each_other(backend: Backend, tmp_path: Path) -> None:
    _needs_persistence(backend)
    one = await backend.open(tmp_path)
    two = await backend.open(tmp_path)
    try:
        r1 = await one.commit(CommitRequest("s", None, [add("alpha"), add("beta")]))
        await one.put_vectors("s", "p", [(r1.keys[0], unit(1, 0))])
        assert len(await two.vector_candidates(VectorQuery("s", 1, "p", unit(1, 0), limit=5))) == 1
        assert await two.missing_vector_count("s", 1, "p") == 1
        await two.put_vectors("s", "p", [(r1.keys[1], unit(0, 1))])
        versions = await two.fetch_versions("s", r1.keys)
        await two.commit(CommitRequest("s", 1, [retire(versions[r1.keys[0]])]))
        with pytest.raises(RevisionConflictError):
            await one.commit(CommitRequest("s", 1, [add("stale in the other store")]))
        # The first store's cached vectors learn the retirement and the new vector.
        assert [
            c.key
            for c in await one.vector_candidates(VectorQuery("s", 2, "p", unit(1, 0), limit=5))
        ] == [r1.keys[1]]
        at1 = await one.vector_candidates(VectorQuery("s", 1, "p", unit(1, 0), limit=5))
        assert [c.key for c in at1] == [r1.keys[0], r1.keys[1]]
        assert await one.missing_vector_count("s", 2, "p") == 0
        await two.put_vectors("s", "p", [(r1.keys[1], unit(-1, 0))])
        (replaced,) = await one.vector_candidates(VectorQuery("s", 2, "p", unit(1, 0), limit=5))
        assert replaced.similarity == pytest.approx(-1.0, abs=1e-5)
    finally:
        await one.close()
        await two.close()
