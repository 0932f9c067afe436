"""Sign bits are taken after a random rotation, so sparse and low-rank vectors keep recall."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.storage.sqlite.signbits import SignBits, rotation

ROWS = 5000
WANTED = 250


def _recall(rows: npt.NDArray[np.float32], queries: npt.NDArray[np.float32]) -> float:
    bits = SignBits(rows.shape[1])
    bits.reserve(rows.shape[0])
    bits.set(np.arange(rows.shape[0]), rows)
    found = 0
    for query in queries:
        similarities = rows @ query
        cut = np.partition(similarities, rows.shape[0] - 30)[rows.shape[0] - 30]
        kept = similarities[bits.nearest(query, rows.shape[0], WANTED, None)]
        best = kept[np.argpartition(-kept, 29)[:30]]
        found += int(np.count_nonzero(best >= cut - 1e-6))
    return found / (30 * len(queries))


def test_the_rotation_is_fixed_and_orthogonal() -> None:
    first, second = rotation(384), rotation(384)
    assert first is second  # computed once per dimension
    assert np.allclose(first @ first.T, np.eye(384), atol=1e-4)
    # Persisted snapshots hold bits computed with it: it must not change between releases.
    assert round(float(first[0, 0]), 6) == round(float(_reference_first_entry()), 6)


def _reference_first_entry() -> float:
    gaussian = np.random.default_rng(20_261_206).standard_normal((384, 384))
    return float(np.linalg.qr(gaussian)[0][0, 0])


def test_feature_hashing_vectors_keep_their_neighbours() -> None:
    rng = np.random.default_rng(4)
    vocabulary = [f"w{i}" for i in range(3000)]
    texts = [" ".join(rng.choice(vocabulary, size=12)) for _ in range(ROWS)]
    embedder = HashingEmbedder(384)
    rows = np.asarray(embedder.embed_sync(texts), dtype=np.float32)
    asked = [" ".join(text.split()[:3]) for text in texts[:: ROWS // 40]]
    queries = np.asarray(embedder.embed_sync(asked), dtype=np.float32)
    assert _recall(rows, queries) >= 0.95


def test_low_rank_vectors_in_a_positive_cone_keep_their_neighbours() -> None:
    rng = np.random.default_rng(3)
    basis = np.abs(rng.standard_normal((16, 384))).astype(np.float32)
    drawn = rng.standard_normal((ROWS + 40, 16)).astype(np.float32) @ basis
    units = (drawn / np.linalg.norm(drawn, axis=1, keepdims=True)).astype(np.float32)
    assert _recall(units[:ROWS], units[ROWS:]) >= 0.95
