"""A deterministic feature-hashing embedder with no model and no dependencies beyond numpy.

It is lexical, not semantic: texts are similar exactly when they share analyzer tokens (the
same casefolded, stemmed words and CJK grams the full-text channel indexes), so "car" and
"automobile" are unrelated to it. Use it for tests, for benchmarks at a million entries, and
for smoke runs on air-gapped machines; use a real model for recall.

Each token is hashed with BLAKE2b (stable across processes and platforms, unlike `hash()`)
into one of `dimension` buckets with a sign taken from another bit of the digest, so
collisions cancel on average rather than pile up; the counts are L2-normalized.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from powercontext.memory.models import EmbeddingProfile
from powercontext.memory.search.analyze import analyze

DEFAULT_DIMENSION = 384
MAX_DIMENSION = 8192
EMPTY_TOKEN = "\x00empty"
"""Stands in for a text without tokens, so every vector is a unit vector."""
# Below this many texts the hop to a worker thread costs more than it saves the event loop.
_THREAD_THRESHOLD = 64


@lru_cache(maxsize=1 << 17)
def _bucket(token: str) -> int:
    """A signed bucket key: bit 0 is the sign, the rest picks the bucket modulo dimension."""
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def hashing_profile(dimension: int) -> EmbeddingProfile:
    return EmbeddingProfile(profile_id=f"hash:{dimension}", dimension=dimension)


class HashingEmbedder:
    """Feature hashing of analyzer tokens into `dimension` signed buckets (see module doc)."""

    def __init__(self, dimension: int = DEFAULT_DIMENSION) -> None:
        if not 1 <= dimension <= MAX_DIMENSION:
            raise ValueError(f"dimension must be within 1..{MAX_DIMENSION}, got {dimension}")
        self.dimension = dimension
        self.profile = hashing_profile(dimension)

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The vectors of `texts` as one (len(texts), dimension) float32 matrix."""
        dimension = self.dimension
        flat: list[int] = []
        signs: list[float] = []
        for row, text in enumerate(texts):
            tokens = analyze(text) or [EMPTY_TOKEN]
            base = row * dimension
            for token in tokens:
                key = _bucket(token)
                flat.append(base + (key >> 1) % dimension)
                signs.append(1.0 if key & 1 else -1.0)
        counts = np.bincount(
            np.asarray(flat, dtype=np.int64),
            weights=np.asarray(signs, dtype=np.float64),
            minlength=len(texts) * dimension,
        ).reshape(len(texts), dimension)
        norms = np.linalg.norm(counts, axis=1, keepdims=True)
        # All of a text's tokens can cancel out; the empty-token vector keeps the norm at 1.
        empty_key = _bucket(EMPTY_TOKEN)
        for cancelled in np.flatnonzero(norms[:, 0] == 0.0):
            counts[cancelled, (empty_key >> 1) % dimension] = 1.0 if empty_key & 1 else -1.0
            norms[cancelled, 0] = 1.0
        vectors: npt.NDArray[np.float32] = (counts / norms).astype(np.float32)
        return vectors

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._embed_many(texts, "embed_documents")

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Queries and documents embed alike here (no query prefix)."""
        return await self._embed_many(texts, "embed_queries")

    async def _embed_many(self, texts: Sequence[str], method: str) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError(f"{method} takes a sequence of texts, not one string")
        if not texts:
            return []
        if len(texts) < _THREAD_THRESHOLD:
            matrix = self.embed_sync(texts)
        else:
            matrix = await asyncio.to_thread(self.embed_sync, list(texts))
        result: list[list[float]] = matrix.tolist()
        return result

    async def embed_query(self, text: str) -> list[float]:
        result: list[float] = self.embed_sync([text])[0].tolist()
        return result
