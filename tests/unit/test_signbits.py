"""Sign-bit pre-filter: distances are true Hamming distances (of the rotated vectors), masks
are exact, cuts keep ties."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from powercontext.storage.sqlite.signbits import SignBits, rotation


def _rows(count: int, dimension: int, seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((count, dimension)).astype(np.float32)


def _filled(vectors: npt.NDArray[np.float32]) -> SignBits:
    bits = SignBits(vectors.shape[1])
    bits.reserve(vectors.shape[0])
    bits.set(np.arange(vectors.shape[0], dtype=np.int64), vectors)
    return bits


def test_distances_equal_the_count_of_differing_signs_for_odd_dimensions() -> None:
    vectors = _rows(300, 100, 1)  # 100 dimensions: two words, the second one padded
    bits = _filled(vectors)
    query = _rows(1, 100, 2)[0]
    # Signs of the rotated vectors (signbits.rotation), rotated as SignBits rotates them.
    rotated_rows = vectors @ rotation(100)
    rotated_query = np.einsum("j,jk->k", query, rotation(100))
    expected = ((rotated_rows > 0) != (rotated_query > 0)).sum(axis=1)
    assert bits.words == 2
    assert np.array_equal(bits.distances(query, 300), expected)


def test_nearest_keeps_every_row_tied_at_the_cut_and_never_a_masked_row() -> None:
    vectors = _rows(500, 64, 3)
    bits = _filled(vectors)
    query = vectors[7]
    distances = bits.distances(query, 500)
    masked = np.asarray([7, 8, 9], dtype=np.int64)
    rows = bits.nearest(query, 500, 40, masked)
    assert not set(masked.tolist()) & set(rows.tolist())
    cut = distances[rows].max()
    live = np.setdiff1d(np.arange(500), masked)
    assert set(rows.tolist()) == set(live[distances[live] <= cut].tolist())
    assert rows.size >= 40


def test_asking_for_more_rows_than_exist_returns_every_active_row() -> None:
    bits = _filled(_rows(50, 32, 4))
    rows = bits.nearest(_rows(1, 32, 5)[0], 50, 1000, np.asarray([0], dtype=np.int64))
    assert sorted(rows.tolist()) == list(range(1, 50))


def test_replacing_a_row_replaces_its_bits_and_growth_keeps_old_rows() -> None:
    vectors = _rows(10, 64, 6)
    bits = _filled(vectors)
    target = -vectors[3]
    bits.set(np.asarray([3], dtype=np.int64), target.reshape(1, -1))
    bits.reserve(4096)
    assert bits.distances(target, 10)[3] == 0
    assert bits.distances(vectors[5], 10)[5] == 0
