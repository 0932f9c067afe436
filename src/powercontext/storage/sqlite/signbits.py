"""Sign-bit (binary) quantization of a vector matrix: a Hamming pre-filter, then exact rescoring.

Each row keeps one bit per dimension (is the component positive?), packed into uint64 words
and stored one contiguous array per word, so a query is `words` XOR + popcount passes over
contiguous memory. The rows nearest in Hamming distance are a superset of the true nearest
ones with high probability; they are rescored exactly against the float32 matrix, so every
similarity a caller sees is exact and only recall is approximate.

The bits are taken after a fixed random rotation of the space (random-hyperplane hashing,
SimHash): the expected Hamming distance is then proportional to the angle between two vectors
whatever their distribution. Raw coordinate signs are not: sparse vectors (the feature-hashing
embedder's ~14 non-zeros of 384) or low-rank vectors in a positive cone share most of their
sign bits with everything, and recall@30 at 100k fell to 0.25 (hashing) and 0.79-0.93 (rank
64-8); rotated, it is 0.95-1.0 on those and unchanged (0.98) on the benchmark's dense vectors
(bench/vector_index.py, docs/storage.md). The rotation costs one 384 x 384 product per stored
row and per query.

Why this rather than a graph index: at 100k x 384 the filter and the rescoring of the best
1,000 rows take ~0.8 ms with recall@30 0.98 on the benchmark vectors, where HNSW (M 16, ef 256)
took ~2.3 ms at recall 0.90 and 35-70 s to build. The bits cost 48 bytes a row, are updated
with the matrix row by row, and honour any revision mask exactly (masked rows get the worst
distance), so nothing has to be built, rebuilt or persisted.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

WORD = 64
UInt16Array = npt.NDArray[np.uint16]
SELF_CHECK_QUERIES = 16
SELF_CHECK_DEPTH = 30


ROTATION_SEED = 20_261_206
_SLAB = 32_768


_ROTATIONS: dict[int, npt.NDArray[np.float32]] = {}


def rotation(dimension: int) -> npt.NDArray[np.float32]:
    """A fixed random orthogonal matrix: the same for every process and every release, since
    snapshots (vector_snapshots.py) persist bits computed with it. Computed once per process, or
    taken from a snapshot (`adopt_rotation`): its QR took over a second on a loaded machine."""
    found = _ROTATIONS.get(dimension)
    if found is None:
        gaussian = np.random.default_rng(ROTATION_SEED).standard_normal((dimension, dimension))
        orthogonal, _ = np.linalg.qr(gaussian)
        found = _ROTATIONS[dimension] = np.ascontiguousarray(orthogonal, dtype=np.float32)
    return found


def adopt_rotation(matrix: npt.NDArray[np.float32]) -> None:
    """Use a rotation read back from a snapshot, which stores the one its bits were made with."""
    if matrix.ndim == 2 and matrix.shape[0] == matrix.shape[1]:
        _ROTATIONS.setdefault(int(matrix.shape[0]), np.ascontiguousarray(matrix))


def pack(vectors: npt.NDArray[np.float32], words: int) -> npt.NDArray[np.uint64]:
    """(rows, words) sign bits, zero-padded to whole words (padding XORs to zero)."""
    bits = np.packbits(vectors > 0, axis=1)
    padded = np.zeros((vectors.shape[0], words * 8), dtype=np.uint8)
    padded[:, : bits.shape[1]] = bits
    return padded.view(np.uint64)


class SignBits:
    """Sign bits of matrix rows [0, capacity), stored word-major: `columns[w][row]`."""

    def __init__(self, dimension: int) -> None:
        self.words = (dimension + WORD - 1) // WORD
        self.rotation = rotation(dimension)
        self.masked = self.words * WORD + 1
        """Distance given to masked rows: worse than any real one."""
        self.columns: npt.NDArray[np.uint64] = np.zeros((self.words, 0), dtype=np.uint64)

    def reserve(self, capacity: int) -> None:
        if capacity > self.columns.shape[1]:
            grown = np.zeros((self.words, capacity), dtype=np.uint64)
            grown[:, : self.columns.shape[1]] = self.columns
            self.columns = grown

    def set(self, positions: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        # In slabs: rotating a whole 1M-row fill at once would hold another 1.5 GB.
        for start in range(0, positions.shape[0], _SLAB):
            rotated = np.asarray(vectors[start : start + _SLAB], dtype=np.float32) @ self.rotation
            self.columns[:, positions[start : start + _SLAB]] = pack(rotated, self.words).T

    def distances(self, query: npt.NDArray[np.float32], size: int) -> UInt16Array:
        """Hamming distance from the query's bits to each of rows [0, size)."""
        # einsum, not BLAS: a threaded matrix-vector product is erratic on a loaded machine.
        rotated = np.einsum("j,jk->k", query, self.rotation)
        target = pack(rotated.reshape(1, -1), self.words)[0]
        scratch = np.empty(size, dtype=np.uint64)
        counts = np.empty(size, dtype=np.uint8)
        total = np.zeros(size, dtype=np.uint16)
        for word in range(self.words):
            np.bitwise_xor(self.columns[word, :size], target[word], out=scratch)
            np.bitwise_count(scratch, out=counts)
            np.add(total, counts, out=total)
        return total

    def nearest(
        self,
        query: npt.NDArray[np.float32],
        size: int,
        wanted: int,
        inactive: npt.NDArray[np.int64] | None,
    ) -> npt.NDArray[np.int64]:
        """Positions of at least `wanted` active rows (all of them if fewer) closest in
        Hamming distance; ties at the cut are all kept."""
        distances = self.distances(query, size)
        if inactive is not None and inactive.size:
            distances[inactive] = self.masked
        # A counting pass finds the cut distance in O(n), cheaper than argpartition.
        cumulative = np.cumsum(np.bincount(distances, minlength=self.masked + 1))
        cut = min(int(np.searchsorted(cumulative, wanted)), self.masked - 1)
        rows: npt.NDArray[np.int64] = np.flatnonzero(distances <= cut)
        return rows


def sign_bit_recall(
    matrix: npt.NDArray[np.float32], bits: SignBits, rescored: Callable[[int], int]
) -> float:
    """Recall@30 of the sign-bit path against exact search, with stored rows as queries.

    Rows spread evenly over the matrix stand in for queries (a query has no distribution of
    its own to sample). Recall is tie-aware: a row counts when its exact similarity reaches
    the exact 30th best. One matrix product serves all the sample queries.
    """
    size = int(matrix.shape[0])
    depth = min(SELF_CHECK_DEPTH, size)
    if depth == 0:
        return 1.0
    positions = np.linspace(0, size - 1, num=min(SELF_CHECK_QUERIES, size)).astype(np.int64)
    queries = matrix[positions]
    exact = matrix @ queries.T  # (size, queries)
    wanted = rescored(size)
    found = 0
    for column, query in enumerate(queries):
        similarities = exact[:, column]
        cut = np.partition(similarities, size - depth)[size - depth]
        rows = bits.nearest(query, size, wanted, None)
        candidate = similarities[rows]
        best = (
            candidate[np.argpartition(-candidate, depth - 1)[:depth]]
            if rows.size > depth
            else candidate
        )
        found += int(np.count_nonzero(best >= cut - 1e-6))
    return found / (depth * len(positions))
