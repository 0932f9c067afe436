"""The numpy vector cache refreshes incrementally and stays exact."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from powercontext.memory.ports import CommitRequest, PlannedChange
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.vectors import VectorMatrix, VectorRow
from tests.integration.planned import planned_adds


class CountingMatrix(VectorMatrix):
    def __init__(self, scope_id: str, profile_id: str) -> None:
        super().__init__(scope_id, profile_id)
        self.fetched: list[int] = []

    def _upsert(self, rows: Sequence[VectorRow]) -> None:
        self.fetched.append(len(rows))
        super()._upsert(rows)


def _adds(count: int, start: int = 0) -> list[PlannedChange]:
    return planned_adds([f"text {i}" for i in range(start, start + count)], start)


def _units(count: int, dimension: int, seed: int) -> npt.NDArray[np.float32]:
    matrix = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    units: npt.NDArray[np.float32] = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return units


def _refresh(matrix: VectorMatrix, path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        matrix.refresh(conn)
    finally:
        conn.close()


async def test_refresh_reads_only_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = await SqliteMemoryStore.open(path)
    try:
        result = await store.commit(CommitRequest("s", None, _adds(1_500)))
        vectors = _units(1_500, 16, seed=1)
        await store.put_vectors("s", "p", list(zip(result.keys, vectors, strict=True)))
        matrix = CountingMatrix("s", "p")
        _refresh(matrix, path)
        assert matrix.fetched == [1_500] and matrix.size == 1_500  # grew past one slab
        _refresh(matrix, path)
        assert matrix.fetched == [1_500]  # nothing new: nothing read

        query = _units(1, 16, seed=2)[0]
        expected = np.argsort(-(vectors @ query), kind="stable")[:10]
        assert [c.key for c in matrix.search(1, query, 10)] == [result.keys[i] for i in expected]

        await store.put_vectors("s", "p", [(result.keys[0], query)])  # replace one vector
        _refresh(matrix, path)
        assert matrix.fetched == [1_500, 1] and matrix.size == 1_500
        assert matrix.search(1, query, 1)[0].key == result.keys[0]

        versions = await store.fetch_versions("s", [result.keys[0]])
        retire = PlannedChange(
            op="retire", previous_entry_version_id=versions[result.keys[0]].entry_version_id
        )
        await store.commit(CommitRequest("s", 1, [retire]))
        _refresh(matrix, path)
        assert matrix.fetched == [1_500, 1]  # a retirement reads no vectors
        assert matrix.search(2, query, 1)[0].key != result.keys[0]
        assert matrix.search(1, query, 1)[0].key == result.keys[0]
        assert matrix.active_count(2) == 1_499 and matrix.active_count(1) == 1_500
    finally:
        await store.close()
