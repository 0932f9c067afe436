"""Vector snapshots: mapped by a new store instead of re-reading every vector, and exact."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from powercontext.memory.ports import (
    CommitRequest,
    ErasureRequest,
    FtsQuery,
    PlannedChange,
    VectorQuery,
)
from powercontext.storage.sqlite import (
    SqliteMemoryStore,
    mapped,
    signbits,
    vector_snapshots,
    vectors,
)
from powercontext.storage.sqlite.ann import IndexOptions
from powercontext.storage.sqlite.vectors import VectorMatrix
from tests.integration.planned import planned_adds

# Small thresholds so that a few hundred rows exercise the sign-bit path and the snapshots.
OPTIONS = IndexOptions(ann_min_rows=100, snapshot_min_rows=100, rescore_min=50)
DIMENSION = 32


def _adds(count: int, start: int = 0) -> list[PlannedChange]:
    return planned_adds([f"text {i}" for i in range(start, start + count)], start)


def _units(count: int, seed: int) -> npt.NDArray[np.float32]:
    matrix = np.random.default_rng(seed).standard_normal((count, DIMENSION)).astype(np.float32)
    units: npt.NDArray[np.float32] = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return units


async def _filled(path: Path, count: int, seed: int = 1) -> list[int]:
    store = await SqliteMemoryStore.open(path, index=OPTIONS)
    try:
        result = await store.commit(CommitRequest("s", None, _adds(count)))
        vectors = _units(count, seed)
        await store.put_vectors("s", "p", list(zip(result.keys, vectors, strict=True)))
        await store.vector_candidates(
            VectorQuery("s", 1, "p", vectors[0], limit=5)
        )  # fills, then saves
        return list(result.keys)
    finally:
        await store.close()


async def _search_and_matrix(
    path: Path, revision: int, query: npt.NDArray[np.float32], limit: int = 10
) -> tuple[list[int], VectorMatrix]:
    store = await SqliteMemoryStore.open(path, index=OPTIONS)
    try:
        found = await store.vector_candidates(VectorQuery("s", revision, "p", query, limit=limit))
        return [c.key for c in found], store._vectors.get("s", "p")
    finally:
        await store.close()


async def _exact(path: Path, revision: int, query: npt.NDArray[np.float32]) -> list[int]:
    store = await SqliteMemoryStore.open(path, index=IndexOptions(ann=False, snapshots=False))
    try:
        found = await store.vector_candidates(VectorQuery("s", revision, "p", query, limit=10))
        return [c.key for c in found]
    finally:
        await store.close()


async def test_a_new_store_maps_the_snapshot_and_reads_no_vectors(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    await _filled(path, 300)
    files = list((tmp_path / "memory.sqlite3.cache").glob("vectors-*.bin"))
    assert len(files) == 1
    query = _units(1, seed=9)[0]
    keys, matrix = await _search_and_matrix(path, 1, query)
    assert matrix.snapshot_size == 300 and matrix.rows_since_snapshot == 0
    assert matrix.size == 300 and matrix._row_of is None  # nothing read, nothing rebuilt
    assert keys == await _exact(path, 1, query)


async def test_a_stale_snapshot_catches_up_with_writes_replacements_and_retirements(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.sqlite3"
    keys = await _filled(path, 300)
    query = _units(1, seed=9)[0]
    store = await SqliteMemoryStore.open(path, index=IndexOptions(snapshots=False))
    try:
        more = await store.commit(CommitRequest("s", 1, _adds(20, start=300)))
        await store.put_vectors("s", "p", list(zip(more.keys, _units(20, 3), strict=True)))
        await store.put_vectors("s", "p", [(keys[5], query)])  # a replaced vector
        versions = await store.fetch_versions("s", [keys[7]])
        retire = PlannedChange(
            op="retire", previous_entry_version_id=versions[keys[7]].entry_version_id
        )
        await store.commit(CommitRequest("s", 2, [retire]))
    finally:
        await store.close()
    for revision in (1, 2, 3):
        found, matrix = await _search_and_matrix(path, revision, query)
        assert matrix.snapshot_size == 300 and matrix.rows_since_snapshot == 21
        assert found == await _exact(path, revision, query)
    assert found[0] == keys[5]
    assert keys[7] not in (await _search_and_matrix(path, 3, _units(300, 1)[7]))[0]


async def test_a_snapshot_of_another_database_is_ignored(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "memory.sqlite3", tmp_path / "b" / "memory.sqlite3"
    await _filled(first, 300, seed=1)
    await _filled(second, 300, seed=2)
    # Same scope, profile, keys and revisions; different vectors.
    shutil.rmtree(tmp_path / "b" / "memory.sqlite3.cache")
    shutil.copytree(
        tmp_path / "a" / "memory.sqlite3.cache", tmp_path / "b" / "memory.sqlite3.cache"
    )
    query = _units(1, seed=9)[0]
    found, matrix = await _search_and_matrix(second, 1, query)
    assert matrix.rows_since_snapshot == 0 and matrix.snapshot_size == 300  # rebuilt, saved
    assert found == await _exact(second, 1, query)
    found, matrix = await _search_and_matrix(second, 1, query)
    assert matrix._row_of is None  # the rewritten snapshot is this database's: mapped
    assert found == await _exact(second, 1, query)


async def test_an_unreadable_snapshot_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    await _filled(path, 300)
    (snapshot,) = (tmp_path / "memory.sqlite3.cache").glob("vectors-*.bin")
    snapshot.write_bytes(b"not a snapshot")
    query = _units(1, seed=9)[0]
    found, _ = await _search_and_matrix(path, 1, query)
    assert found == await _exact(path, 1, query)
    assert snapshot.stat().st_size > 300 * DIMENSION * 4  # written afresh


async def test_small_matrices_and_memory_databases_write_no_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    await _filled(path, 99)
    assert not list((tmp_path / "memory.sqlite3.cache").glob("*"))
    assert vector_snapshots.snapshot_path(":memory:", "s", "p") is None
    assert mapped.discard(":memory:") == 0


async def test_discard_and_drop_caches_forget_the_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    keys = await _filled(path, 300)
    store = await SqliteMemoryStore.open(path, index=OPTIONS)
    try:
        query = _units(300, 1)[3]
        assert (await store.vector_candidates(VectorQuery("s", 1, "p", query, limit=1)))[
            0
        ].key == keys[3]
        # Erasure deletes a vector in place, which no incremental refresh can see.
        await store._write(
            lambda conn: conn.execute("DELETE FROM entry_vectors WHERE key = ?", (keys[3],)),
            "erasing",
        )
        store.drop_caches()
        assert not list((tmp_path / "memory.sqlite3.cache").glob("vectors-*"))
        found = await store.vector_candidates(VectorQuery("s", 1, "p", query, limit=300))
        assert keys[3] not in [c.key for c in found] and len(found) == 299
    finally:
        await store.close()


async def test_the_sign_bit_self_check_and_rotation_are_saved_with_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.sqlite3"
    await _filled(path, 300)

    def no_second_check(*args: object) -> float:
        raise AssertionError("the self-check ran again after mapping the snapshot")

    monkeypatch.setattr(vectors, "sign_bit_recall", no_second_check)
    # Nor is the rotation recomputed: the snapshot holds the one its bits were made with.
    monkeypatch.setattr(signbits, "_ROTATIONS", {})
    monkeypatch.setattr(np.linalg, "qr", no_second_check)
    query = _units(1, seed=9)[0]
    found, matrix = await _search_and_matrix(path, 1, query)
    assert matrix.checked_size == 300 and matrix.sign_bits_ok
    assert found == await _exact(path, 1, query)


async def test_erasure_deletes_the_snapshots_and_an_older_one_is_not_trusted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.sqlite3"
    cache = tmp_path / "memory.sqlite3.cache"
    keys = await _filled(path, 300)
    query = _units(300, 1)[3]
    store = await SqliteMemoryStore.open(path, index=OPTIONS)
    try:
        await store.fts_candidates(
            FtsQuery("s", 1, ["text"], limit=5)
        )  # writes the postings snapshot
        saved = {p.name: p.read_bytes() for p in cache.iterdir()}
        assert any(n.startswith("vectors-") for n in saved)
        assert any(n.startswith("terms-") for n in saved)
        result = await store.erase(ErasureRequest("s", 1, ["e3"], actor=None, reason=None))
        assert result.erased
        # The files held the erased vector and tokens: erasure deletes them.
        assert not list(cache.glob("vectors-*")) and not list(cache.glob("terms-*"))
    finally:
        await store.close()
    # A process that read before the erasure may still write its snapshot afterwards: one
    # from before the erasure is cleared when mapped, never served.
    for name, data in saved.items():
        (cache / name).write_bytes(data)
    found, matrix = await _search_and_matrix(path, 2, query, limit=300)
    assert keys[3] not in found and len(found) == 299
    assert matrix.erasures == 1
    store = await SqliteMemoryStore.open(path, index=OPTIONS)
    try:
        words = await store.fts_candidates(FtsQuery("s", 2, ["3"], limit=300))
        assert keys[3] not in [c.key for c in words]
    finally:
        await store.close()


async def test_a_snapshot_written_after_an_erasure_is_mapped(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    keys = await _filled(path, 300)
    store = await SqliteMemoryStore.open(path, index=OPTIONS)
    try:
        await store.erase(ErasureRequest("s", 1, ["e3"], actor=None, reason=None))
        await store.vector_candidates(
            VectorQuery("s", 2, "p", _units(1, seed=4)[0], limit=5)
        )  # saves anew
    finally:
        await store.close()
    (file,) = (tmp_path / "memory.sqlite3.cache").glob("vectors-*")
    written = file.stat().st_mtime_ns, file.stat().st_ino
    query = _units(1, seed=9)[0]
    found, matrix = await _search_and_matrix(path, 2, query)
    # The snapshot carries the erasure count it was filled at: mapped as it is, not refilled
    # from the database and written again.
    assert matrix.erasures == 1 and matrix._row_of is None
    assert (file.stat().st_mtime_ns, file.stat().st_ino) == written
    assert keys[3] not in found and found == await _exact(path, 2, query)
