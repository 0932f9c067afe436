"""Vector search over an in-memory matrix per (scope, embedding profile): exact or quantized.

The stdlib sqlite3 of common Python builds cannot load vector extensions, so vectors live in
`entry_vectors` as float32 blobs and search runs in numpy. The matrix holds every version that
has a vector, with its added/removed revisions: a search at revision r masks the rows active
at r, does one matrix-vector product and an argpartition. The cache refreshes incrementally
from the database (vectors newer than the last vector_id seen, removals after the last head
seen), so writes from other processes are picked up too.

Large matrices (IndexOptions.ann_min_rows, default 20k rows) are searched approximately: by
default a sign-bit Hamming pre-filter kept row by row with the matrix, then exact rescoring of
the best rows (signbits.py); optionally an HNSW graph built on first search (ann.py), which
falls back to exact search for heavily masked old revisions or when it cannot answer.

Raw sign bits lost answers on sparse vectors (the feature-hashing embedder has ~14 non-zeros
of 384) and low-rank ones; the bits are therefore taken after a random rotation (signbits.py),
which keeps recall on those. Two rules still keep some searches exact:
- a sparse query (at most a quarter of its components non-zero) is scored exactly on its own
  support, which is cheaper than the full product and never approximate;
- before a matrix is first searched approximately, and again each time it has doubled, the
  sign-bit path is checked against exact search on a sample of stored rows
  (signbits.SELF_CHECK_RECALL); a matrix that fails is searched exactly.

Matrices of at least `IndexOptions.snapshot_min_rows` rows are persisted as memory-mapped
snapshots next to the database (vector_snapshots.py): a new process maps one and catches up from it
instead of reading every vector back.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from powercontext.memory.errors import MemoryValidationError, StorageError
from powercontext.memory.ports import Vector, VectorCandidate
from powercontext.storage.sqlite import vector_snapshots
from powercontext.storage.sqlite.ann import HnswIndex, IndexOptions
from powercontext.storage.sqlite.lru import LruCache
from powercontext.storage.sqlite.scope_cache import ScopeCache
from powercontext.storage.sqlite.signbits import SignBits, sign_bit_recall

log = logging.getLogger("powercontext.storage")

NOT_REMOVED = np.iinfo(np.int64).max
Int64Array = npt.NDArray[np.int64]
VectorRow = tuple[int, int, bytes, int, int | None]
"""vector_id, key, float32 blob, added_revision, removed_revision"""
G = TypeVar("G", bound=np.generic)


def unit(vector: Vector) -> Vector:
    """Unit-length float32 copy; a zero vector stays zero (it matches nothing)."""
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array.copy()


class VectorMatrix(ScopeCache):
    """The cached rows of one (scope, profile) (snapshot: vector_snapshots.py). Callers hold `lock`
    around refresh + use."""

    def __init__(
        self,
        scope_id: str,
        profile_id: str,
        options: IndexOptions | None = None,
        snapshot: Path | None = None,
    ) -> None:
        super().__init__(scope_id, snapshot)
        self.profile_id = profile_id
        self.options = options or IndexOptions(ann=False)
        self._clear()

    def _clear(self) -> None:
        self.ann: HnswIndex | None = None
        self._replaced: set[int] = set()
        """Rows the ANN index holds whose vector was replaced since it last caught up."""
        self._mask: tuple[int, npt.NDArray[np.bool_]] | None = None
        self._inactive: tuple[int, Int64Array] | None = None
        self.bits: SignBits | None = None
        self.dimension = 0
        self.size = 0
        self.matrix: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self.keys: Int64Array = np.zeros(0, dtype=np.int64)
        self.added: Int64Array = np.zeros(0, dtype=np.int64)
        self.removed: Int64Array = np.zeros(0, dtype=np.int64)
        self._row_of: dict[int, int] | None = {}
        self.last_vector_id = 0
        self.last_vector_key = 0
        self.last_vector_row = 0
        """Key and row position of the vector `last_vector_id`."""
        self.last_head = 0
        self.checked_size = 0
        """Matrix size at the last sign-bit self-check (0: never checked)."""
        self.sign_bits_ok = True
        """Whether that check found the sign-bit path's recall good enough."""
        self.snapshot_size = 0
        self.rows_since_snapshot = 0
        """Vector rows read from the database since the snapshot was written or mapped."""
        self.erasures = 0
        """The scope's erasure count when the matrix was filled (see storage.sqlite.erasure)."""

    @property
    def row_of(self) -> dict[int, int]:
        """Row position of each key, built on first use after mapping a snapshot: a search
        that finds nothing new never needs it (1M keys cost ~0.3 s and ~100 MB)."""
        if self._row_of is None:
            keys = self.keys[: self.size].tolist()
            self._row_of = dict(zip(keys, range(len(keys)), strict=True))
        return self._row_of

    def forget_rows(self) -> None:
        self._row_of = None
        self._mask = self._inactive = None

    def refresh(self, conn: sqlite3.Connection, persist: bool = True) -> None:
        """Catch up with the database, within the caller's read transaction; with `persist`,
        write a snapshot if one is due (searches do; the writers' bookkeeping does not, so that
        an ingest does not rewrite it at every quarter of growth)."""
        # After an erasure the vectors, and the ANN graph and sign bits built from them, go.
        head = self.catch_up(conn, vector_snapshots.restore, self._clear)
        rows: list[VectorRow] = conn.execute(
            "SELECT e.vector_id, e.key, e.vector, v.added_revision, v.removed_revision "
            "FROM entry_vectors e JOIN entry_versions v ON v.key = e.key "
            "WHERE e.scope_id = ? AND e.profile_id = ? AND e.vector_id > ? "
            "ORDER BY e.vector_id",
            (self.scope_id, self.profile_id, self.last_vector_id),
        ).fetchall()
        if rows:
            self._upsert(rows)
            self._mask = self._inactive = None
        if head > self.last_head:
            if self.last_head and self.size:
                self._apply_removals(conn)
            self.last_head = head
            self._mask = self._inactive = None
        if persist and vector_snapshots.due(self):
            if self.bits is not None and self._use_ann(self.size):
                self._sign_bits_reliable()  # its verdict is saved too: no re-check on mapping
            vector_snapshots.save(self)

    def _upsert(self, rows: Sequence[VectorRow]) -> None:
        dimension = len(rows[0][2]) // 4
        if self.dimension == 0:
            self.dimension = dimension
            self.matrix = np.zeros((0, dimension), dtype=np.float32)
            if self.options.ann_method == "signbits":
                self.bits = SignBits(dimension)
        blobs = [row[2] for row in rows]
        if any(len(blob) != 4 * self.dimension for blob in blobs):
            raise StorageError(
                f"vectors of profile {self.profile_id!r} in scope {self.scope_id!r} "
                "have mixed dimensions"
            )
        vectors = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(rows), self.dimension)
        # A key appears at most once per refresh: REPLACE leaves one row per key.
        positions = np.empty(len(rows), dtype=np.int64)
        fresh = 0
        row_of = self.row_of
        for index, row in enumerate(rows):
            position = row_of.get(row[1])
            if position is None:
                position = self.size + fresh
                row_of[row[1]] = position
                fresh += 1
            elif self.ann is not None and position < self.ann.count:
                self._replaced.add(position)
            positions[index] = position
        self._reserve(self.size + fresh)
        self.size += fresh
        self.matrix[positions] = vectors
        if self.bits is not None:
            self.bits.set(positions, vectors)
        self.keys[positions] = [row[1] for row in rows]
        self.added[positions] = [row[3] for row in rows]
        self.removed[positions] = [NOT_REMOVED if row[4] is None else row[4] for row in rows]
        self.last_vector_id, self.last_vector_key = rows[-1][0], rows[-1][1]
        self.last_vector_row = int(positions[-1])
        self.rows_since_snapshot += len(rows)

    def _reserve(self, rows: int) -> None:
        if rows > self.matrix.shape[0]:
            capacity = max(1024, 2 * self.matrix.shape[0], rows)
            self.matrix = grow(self.matrix, capacity)
            self.keys = grow(self.keys, capacity)
            self.added = grow(self.added, capacity)
            self.removed = grow(self.removed, capacity)
            if self.bits is not None:
                self.bits.reserve(capacity)

    def _apply_removals(self, conn: sqlite3.Connection) -> None:
        for key, removed in conn.execute(
            "SELECT key, removed_revision FROM entry_versions "
            "WHERE scope_id = ? AND removed_revision > ?",
            (self.scope_id, self.last_head),
        ):
            position = self.row_of.get(int(key))
            if position is not None:
                self.removed[position] = int(removed)

    def _active(self, revision: int) -> npt.NDArray[np.bool_]:
        if self._mask is None or self._mask[0] != revision:
            n = self.size
            self._mask = (revision, (self.added[:n] <= revision) & (self.removed[:n] > revision))
        return self._mask[1]

    def _inactive_rows(self, revision: int) -> Int64Array:
        if self._inactive is None or self._inactive[0] != revision:
            self._inactive = (revision, np.flatnonzero(~self._active(revision)))
        return self._inactive[1]

    def active_count(self, revision: int) -> int:
        return int(np.count_nonzero(self._active(revision)))

    def search(
        self,
        revision: int,
        query: Vector,
        limit: int,
        allowed: Int64Array | None = None,
    ) -> list[VectorCandidate]:
        """Nearest versions active at `revision`; with `allowed` (a filter's keys), only
        those, compared exactly so that the filter holds before the top `limit` is taken."""
        if self.size == 0 or limit <= 0:
            return []
        q = unit(query)
        if q.shape[0] != self.dimension:
            raise MemoryValidationError(
                f"query vector has {q.shape[0]} dimensions; profile {self.profile_id!r} "
                f"stores {self.dimension}"
            )
        if not q.any():  # a zero query is similar to nothing, with or without a filter
            return []
        active = self._active(revision)
        if allowed is not None:
            active = active & np.isin(self.keys[: self.size], allowed)
            return self._exact(active, q, limit) if active.any() else []
        count = int(np.count_nonzero(active))
        if count == 0:
            return []
        support = np.flatnonzero(q)
        if 4 * support.size <= self.dimension:
            return self._exact_on_support(active, q, support, limit)
        rows = None
        if self.bits is not None:
            if not (self._use_ann(count) and self._sign_bits_reliable()):
                return self._exact(active, q, limit)
            wanted = self.options.rescore_count(limit, self.size)
            rows = self.bits.nearest(q, self.size, wanted, self._inactive_rows(revision))
            return self._top(rows, np.einsum("ij,j->i", self.matrix[rows], q), limit)
        if self._use_ann(count):
            index = self._catch_up_ann()
            rows = index.query(q, min(limit, count), active)
        if rows is None:
            return self._exact(active, q, limit)
        similarities = np.einsum("ij,j->i", self.matrix[rows], q)
        return self._ranked(rows, similarities)

    def _sign_bits_reliable(self) -> bool:
        """The sign-bit self-check's verdict, re-measured whenever the matrix has doubled."""
        assert self.bits is not None
        if self.checked_size == 0 or self.size >= 2 * self.checked_size:
            n = self.size
            recall = sign_bit_recall(
                self.matrix[:n], self.bits, lambda size: self.options.rescore_count(40, size)
            )
            self.checked_size = n
            self.sign_bits_ok = recall >= self.options.signbits_min_recall
            if not self.sign_bits_ok:
                log.info(
                    "vectors of profile %r in scope %r: sign-bit recall@30 %.2f on %d rows is "
                    "below %.2f; searching them exactly",
                    self.profile_id,
                    self.scope_id,
                    recall,
                    n,
                    self.options.signbits_min_recall,
                )
        return self.sign_bits_ok

    def _use_ann(self, active_count: int) -> bool:
        if not self.options.ann_available() or self.size < self.options.ann_min_rows:
            return False
        # HNSW with under half of the rows active: a filtered walk would visit mostly dead
        # nodes. Sign bits mask rows exactly at no extra cost.
        return self.bits is not None or 2 * active_count >= self.size

    def _catch_up_ann(self) -> HnswIndex:
        """Build the index on first use, then add new rows and replaced vectors."""
        if self.ann is None:
            self.ann = HnswIndex(self.dimension, self.options)
            self._replaced.clear()
        index = self.ann
        pending = np.arange(index.count, self.size, dtype=np.int64)
        if self._replaced:
            replaced = np.fromiter(self._replaced, dtype=np.int64, count=len(self._replaced))
            pending = np.concatenate((replaced, pending))
            self._replaced.clear()
        index.add(self.matrix, pending)
        return index

    def _exact(self, active: npt.NDArray[np.bool_], q: Vector, limit: int) -> list[VectorCandidate]:
        rows = np.flatnonzero(active)
        # einsum runs numpy's own single-threaded loop. A BLAS matrix-vector product spreads
        # over threads and, on a loaded machine, its p90 latency was 10-30x its median.
        similarities = np.einsum("ij,j->i", self.matrix[: self.size], q)
        return self._top(rows, similarities[rows], limit)

    def _exact_on_support(
        self, active: npt.NDArray[np.bool_], q: Vector, support: Int64Array, limit: int
    ) -> list[VectorCandidate]:
        """Exact similarities from the query's non-zero components alone."""
        rows = np.flatnonzero(active)
        if support.size == 0:
            return []
        columns = self.matrix[: self.size, support]
        similarities = np.einsum("ij,j->i", columns, q[support])
        return self._top(rows, similarities[rows], limit)

    def _top(
        self, rows: Int64Array, similarities: npt.NDArray[np.float32], limit: int
    ) -> list[VectorCandidate]:
        take = min(limit, rows.size)
        if take < rows.size:
            # Every row as similar as the cut, ties included, then ranked (ties by key) and
            # cut: argpartition alone would keep tied rows in storage order.
            cut = np.partition(similarities, rows.size - take)[rows.size - take]
            best = np.flatnonzero(similarities >= cut)
            return self._ranked(rows[best], similarities[best])[:take]
        return self._ranked(rows, similarities)

    def _ranked(
        self, rows: npt.NDArray[np.int64], similarities: npt.NDArray[np.float32]
    ) -> list[VectorCandidate]:
        keys = self.keys[rows]
        order = np.lexsort((keys, -similarities))  # best first; ties by key
        return [VectorCandidate(key=int(keys[i]), similarity=float(similarities[i])) for i in order]


def grow(array: npt.NDArray[G], capacity: int) -> npt.NDArray[G]:
    grown: npt.NDArray[G] = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown


class VectorCache:
    """Matrices by (scope, profile), least recently used evicted beyond `max_matrices`."""

    def __init__(
        self,
        max_matrices: int = 64,
        options: IndexOptions | None = None,
        db_path: str | None = None,
    ) -> None:
        self._options = options or IndexOptions()
        self._db_path = db_path if self._options.snapshots else None
        self._matrices: LruCache[tuple[str, str], VectorMatrix] = LruCache(max_matrices)

    def get(self, scope_id: str, profile_id: str) -> VectorMatrix:
        return self._matrices.get((scope_id, profile_id), lambda: self._load(scope_id, profile_id))

    def _load(self, scope_id: str, profile_id: str) -> VectorMatrix:
        snapshot = (
            None
            if self._db_path is None
            else vector_snapshots.snapshot_path(self._db_path, scope_id, profile_id)
        )
        return VectorMatrix(scope_id, profile_id, self._options, snapshot)

    def clear(self) -> None:
        """Forget every matrix; the next search of a scope reads it afresh."""
        self._matrices.clear()

    def drop(self, scope_id: str) -> None:
        """Forget every cached matrix of a scope (after an erasure in this process), once no
        refresh of them is in flight: such a refresh read the scope before the erasure and
        would write its snapshot, erased vectors included, after the caller deleted the
        snapshot files (the same race as TermCache.drop)."""
        for dropped in self._matrices.drop(lambda key: key[0] == scope_id):
            with dropped.lock:
                pass
