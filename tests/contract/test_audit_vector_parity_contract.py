"""Contract: the vector channel admits the same versions in the same order on every backend.

Ties go by key, also where the limit cuts them; a stored zero vector has similarity 0 (it is
compared, not dropped, and never sorted after the negative ones); a zero query finds nothing;
a query of the wrong dimension is refused whatever its values. The similarities used here are
exact in float32, so both backends compute them bit for bit and only the rules can differ.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import (
    EmbeddingProfile,
    RememberMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import CommitRequest, MemoryStore, VectorQuery
from powercontext.memory.service import MemoryService

from .builders import add, unit


class AxisEmbedder:
    """Each letter a-h is an axis: "a b c d" embeds as (1, 1, 1, 1, 0, 0, 0, 0)."""

    profile = EmbeddingProfile(profile_id="axes:8", dimension=8)

    def _embed(self, text: str) -> list[float]:
        return [float(letter in text.split()) for letter in "abcdefgh"]

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self._embed(text)

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]


async def _keys_and_similarities(store: MemoryStore, query: VectorQuery) -> list[tuple[int, float]]:
    return [(c.key, c.similarity) for c in await store.vector_candidates(query)]


async def test_a_stored_zero_vector_ranks_at_similarity_zero(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add("a"), add("zero"), add("c")]))
    a, zero, c = result.keys
    await store.put_vectors(
        "s", "p", [(a, unit(1, 0)), (zero, np.zeros(2, np.float32)), (c, unit(-1, 0))]
    )
    query = unit(1, 0)
    assert await _keys_and_similarities(store, VectorQuery("s", 1, "p", query, limit=3)) == [
        (a, 1.0),
        (zero, 0.0),
        (c, -1.0),
    ]
    # PostgreSQL's cosine distance of a zero vector is NaN, which sorted after every number.
    top = await _keys_and_similarities(store, VectorQuery("s", 1, "p", query, limit=2))
    assert top == [(a, 1.0), (zero, 0.0)]


async def test_ties_at_the_limit_keep_the_smaller_keys(
    store: MemoryStore,
) -> None:
    keys = (await store.commit(CommitRequest("s", None, [add(f"e{i}") for i in range(30)]))).keys
    # Stored back to front, so a table scan meets the larger keys first.
    for start in (20, 10, 0):
        await store.put_vectors("s", "p", [(k, unit(1, 1)) for k in keys[start : start + 10]])
    await store.put_vectors("s", "p", [(keys[-1], unit(1, 0))])
    query = unit(1, 0)
    for limit in (1, 4, 7, 12, 29):
        found = await store.vector_candidates(VectorQuery("s", 1, "p", query, limit=limit))
        assert [c.key for c in found] == [keys[-1], *keys[: limit - 1]], limit


async def test_a_query_of_the_wrong_dimension_is_refused_even_when_zero(
    store: MemoryStore,
) -> None:
    keys = (await store.commit(CommitRequest("s", None, [add("a")]))).keys
    await store.put_vectors("s", "p", [(keys[0], unit(1, 0))])
    for vector in (unit(1, 0, 0), np.zeros(3, np.float32)):
        with pytest.raises(MemoryValidationError, match="dimensions"):
            await store.vector_candidates(VectorQuery("s", 1, "p", vector, limit=3))
    zero = np.zeros(2, np.float32)
    assert await store.vector_candidates(VectorQuery("s", 1, "p", zero, limit=3)) == []


async def test_a_zero_query_finds_nothing_with_a_filter_too(
    store: MemoryStore,
) -> None:
    keys = (await store.commit(CommitRequest("s", None, [add("a"), add("b", kind="rare")]))).keys
    await store.put_vectors("s", "p", [(keys[0], unit(1, 0)), (keys[1], unit(0, 1))])
    rare = MemoryFilter(kinds=("rare",))
    zero = np.zeros(2, np.float32)
    assert await store.vector_candidates(VectorQuery("s", 1, "p", zero, limit=3, where=rare)) == []


async def test_the_similarity_floor_admits_a_hit_exactly_at_it(store: MemoryStore) -> None:
    # "a b c d" is (1, 1, 1, 1) / 2 once stored: its similarity with "a" is 0.5 exactly in
    # float32, and in pgvector's arithmetic.
    memory = MemoryService(store, embedder=AxisEmbedder()).for_scope("floor")
    await memory.remember_many(
        [RememberMemoryRequest(text=text) for text in ("a b c d", "a", "b c", "e f")]
    )

    async def admitted(floor: float) -> list[tuple[str, float]]:
        page = await memory.search(
            SearchMemoryRequest(query="a", mode="vector", limit=10, min_similarity=floor)
        )
        return [(hit.text, hit.explain[0].score) for hit in page.hits]

    assert await admitted(0.5) == [("a", pytest.approx(1.0)), ("a b c d", 0.5)]
    assert await admitted(0.5000001) == [("a", pytest.approx(1.0))]
    assert [text for text, _ in await admitted(-1.0)] == ["a", "a b c d", "b c", "e f"]
