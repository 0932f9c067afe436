"""Contract: vectors per embedding profile, searched at one exact revision."""

from __future__ import annotations

import numpy as np
import pytest

from powercontext.memory.errors import MemoryValidationError, NotFoundError
from powercontext.memory.ports import CommitRequest, MemoryStore, VectorQuery

from .builders import add, random_units, retire, revise, unit


async def test_candidates_are_nearest_first_with_cosine_similarity(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add(f"entry {i}") for i in range(4)]))
    vectors = [unit(1, 0, 0), unit(1, 1, 0), unit(0, 1, 0), unit(-1, 0, 0)]
    await store.put_vectors("s", "p", list(zip(result.keys, vectors, strict=True)))
    found = await store.vector_candidates(VectorQuery("s", 1, "p", unit(1, 0.1, 0), limit=10))
    assert [c.key for c in found] == [result.keys[i] for i in (0, 1, 2, 3)]
    expected = [float(np.dot(v, unit(1, 0.1, 0))) for v in vectors]
    assert [c.similarity for c in found] == pytest.approx(expected, abs=1e-5)
    top = await store.vector_candidates(VectorQuery("s", 1, "p", unit(0, 1, 0), limit=2))
    assert [c.key for c in top] == [result.keys[2], result.keys[1]]
    assert top[0].similarity == pytest.approx(1.0, abs=1e-5)


async def test_candidates_are_masked_to_the_revision(store: MemoryStore) -> None:
    r1 = await store.commit(CommitRequest("s", None, [add("first", entry_id="e"), add("other")]))
    v1 = (await store.fetch_versions("s", r1.keys))[r1.keys[0]]
    r2 = await store.commit(CommitRequest("s", 1, [revise(v1, "second")]))
    r3 = await store.commit(CommitRequest("s", 2, [add("third")]))
    other = (await store.fetch_versions("s", [r1.keys[1]]))[r1.keys[1]]
    await store.commit(CommitRequest("s", 3, [retire(other)]))
    await store.put_vectors(
        "s",
        "p",
        [
            (r1.keys[0], unit(1, 0)),
            (r1.keys[1], unit(1, 0.2)),
            (r2.keys[0], unit(1, 0.1)),
            (r3.keys[0], unit(1, 0.3)),
        ],
    )
    query = unit(1, 0)

    async def keys_at(revision: int) -> list[int]:
        return [
            c.key
            for c in await store.vector_candidates(VectorQuery("s", revision, "p", query, limit=10))
        ]

    assert await keys_at(1) == [r1.keys[0], r1.keys[1]]
    assert await keys_at(2) == [r2.keys[0], r1.keys[1]]
    assert await keys_at(3) == [r2.keys[0], r1.keys[1], r3.keys[0]]
    assert await keys_at(4) == [r2.keys[0], r3.keys[0]]
    assert await keys_at(0) == []


async def test_profiles_and_scopes_are_separate(store: MemoryStore) -> None:
    a = await store.commit(CommitRequest("a", None, [add("a")]))
    b = await store.commit(CommitRequest("b", None, [add("b")]))
    await store.put_vectors("a", "p", [(a.keys[0], unit(1, 0))])
    await store.put_vectors("a", "q", [(a.keys[0], unit(0, 1, 0))])
    await store.put_vectors("b", "p", [(b.keys[0], unit(1, 0))])
    assert [
        c.key for c in await store.vector_candidates(VectorQuery("a", 1, "p", unit(1, 0), limit=5))
    ] == [a.keys[0]]
    found_q = await store.vector_candidates(VectorQuery("a", 1, "q", unit(0, 1, 0), limit=5))
    assert [c.key for c in found_q] == [a.keys[0]]
    assert found_q[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert await store.vector_candidates(VectorQuery("a", 1, "none", unit(1, 0), limit=5)) == []
    assert await store.vector_candidates(VectorQuery("nobody", 1, "p", unit(1, 0), limit=5)) == []


async def test_put_vectors_replaces_a_repeated_key(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add("x"), add("y")]))
    await store.put_vectors("s", "p", [(result.keys[0], unit(1, 0)), (result.keys[1], unit(0, 1))])
    before = await store.vector_candidates(VectorQuery("s", 1, "p", unit(1, 0), limit=1))
    assert before[0].key == result.keys[0]
    await store.put_vectors("s", "p", [(result.keys[0], unit(-1, 0))])
    after = await store.vector_candidates(VectorQuery("s", 1, "p", unit(1, 0), limit=2))
    assert [c.key for c in after] == [result.keys[1], result.keys[0]]
    assert after[1].similarity == pytest.approx(-1.0, abs=1e-5)
    assert await store.missing_vector_count("s", 1, "p") == 0


async def test_put_vectors_stores_unit_vectors(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add("x")]))
    await store.put_vectors("s", "p", [(result.keys[0], np.array([3.0, 4.0], dtype=np.float32))])
    (found,) = await store.vector_candidates(VectorQuery("s", 1, "p", unit(3, 4), limit=1))
    assert found.similarity == pytest.approx(1.0, abs=1e-5)


async def test_put_vectors_rejects_unknown_keys_and_bad_vectors(store: MemoryStore) -> None:
    a = await store.commit(CommitRequest("a", None, [add("a")]))
    b = await store.commit(CommitRequest("b", None, [add("b")]))
    with pytest.raises(NotFoundError):
        await store.put_vectors("a", "p", [(a.keys[0], unit(1, 0)), (b.keys[0], unit(1, 0))])
    assert await store.missing_vector_count("a", 1, "p") == 1  # nothing of the call stored
    with pytest.raises(MemoryValidationError):
        await store.put_vectors("a", "p", [(a.keys[0], np.array([np.nan, 1.0], np.float32))])
    await store.put_vectors("a", "p", [(a.keys[0], unit(1, 0))])
    with pytest.raises(MemoryValidationError):
        await store.put_vectors("a", "p", [(a.keys[0], unit(1, 0, 0))])  # other dimension
    with pytest.raises(MemoryValidationError):
        await store.vector_candidates(VectorQuery("a", 1, "p", unit(1, 0, 0), limit=3))
    await store.put_vectors("a", "p", [])


async def test_missing_vector_count_follows_revisions(store: MemoryStore) -> None:
    assert await store.missing_vector_count("s", 1, "p") == 0
    r1 = await store.commit(CommitRequest("s", None, [add(f"e{i}") for i in range(5)]))
    assert await store.missing_vector_count("s", 1, "p") == 5
    await store.put_vectors("s", "p", [(k, unit(1, i)) for i, k in enumerate(r1.keys[:3])])
    assert await store.missing_vector_count("s", 1, "p") == 2
    assert await store.missing_vector_count("s", 1, "other") == 5
    versions = await store.fetch_versions("s", r1.keys)
    await store.commit(
        CommitRequest("s", 1, [retire(versions[r1.keys[4]])])
    )  # retire one without a vector
    assert await store.missing_vector_count("s", 2, "p") == 1
    assert await store.missing_vector_count("s", 1, "p") == 2
    r3 = await store.commit(CommitRequest("s", 2, [revise(versions[r1.keys[0]], "e0 again")]))
    assert await store.missing_vector_count("s", 3, "p") == 2  # the new version has none yet
    await store.put_vectors("s", "p", [(r3.keys[0], unit(1, 0)), (r1.keys[3], unit(0, 1))])
    assert await store.missing_vector_count("s", 3, "p") == 0
    assert await store.missing_vector_count("s", 2, "p") == 0
    assert await store.missing_vector_count("s", 1, "p") == 1


async def test_versions_missing_vectors_lists_active_head_versions_by_key(
    store: MemoryStore,
) -> None:
    r1 = await store.commit(CommitRequest("s", None, [add(f"e{i}") for i in range(6)]))
    versions = await store.fetch_versions("s", r1.keys)
    await store.commit(CommitRequest("s", 1, [retire(versions[r1.keys[1]])]))
    await store.put_vectors("s", "p", [(r1.keys[2], unit(1, 0))])
    missing = await store.versions_missing_vectors("s", "p", limit=10)
    assert [v.key for v in missing] == [r1.keys[0], r1.keys[3], r1.keys[4], r1.keys[5]]
    assert missing[0].text == "e0" and missing[0].removed_revision is None
    first_two = await store.versions_missing_vectors("s", "p", limit=2)
    assert [v.key for v in first_two] == [r1.keys[0], r1.keys[3]]
    assert len(await store.versions_missing_vectors("s", "other", limit=10)) == 5
    assert await store.versions_missing_vectors("nobody", "p", limit=10) == []


async def test_vector_search_sees_vectors_put_after_an_earlier_search(store: MemoryStore) -> None:
    r1 = await store.commit(CommitRequest("s", None, [add("a"), add("b")]))
    await store.put_vectors("s", "p", [(r1.keys[0], unit(1, 0))])
    assert len(await store.vector_candidates(VectorQuery("s", 1, "p", unit(1, 0), limit=5))) == 1
    r2 = await store.commit(CommitRequest("s", 1, [add("c")]))
    await store.put_vectors("s", "p", [(r1.keys[1], unit(0.9, 0.1)), (r2.keys[0], unit(0, 1))])
    found = await store.vector_candidates(VectorQuery("s", 2, "p", unit(1, 0), limit=5))
    assert [c.key for c in found] == [r1.keys[0], r1.keys[1], r2.keys[0]]
    at1 = await store.vector_candidates(VectorQuery("s", 1, "p", unit(1, 0), limit=5))
    assert [c.key for c in at1] == [r1.keys[0], r1.keys[1]]


async def test_exact_search_over_many_vectors_matches_brute_force(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add(f"entry {i}") for i in range(600)]))
    matrix = random_units(600, 32, seed=3)
    for start in range(0, 600, 200):
        await store.put_vectors(
            "s", "p", [(result.keys[i], matrix[i]) for i in range(start, start + 200)]
        )
    query = random_units(1, 32, seed=4)[0]
    found = await store.vector_candidates(VectorQuery("s", 1, "p", query, limit=20))
    expected = np.argsort(-(matrix @ query), kind="stable")[:20]
    assert [c.key for c in found] == [result.keys[i] for i in expected]
