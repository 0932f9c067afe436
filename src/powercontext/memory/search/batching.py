"""What a batch of searches shares: one embedder call per chunk of queries, one answer per
distinct search, and all or nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from powercontext.memory.models import SearchMemoryRequest
from powercontext.memory.ports import EmbeddingModel
from powercontext.memory.values import ResolvedMode

T = TypeVar("T")


async def embed_chunk(embedder: EmbeddingModel, texts: list[str]) -> Sequence[Sequence[float]]:
    # One query alone takes the single search's call, so its vector is the same one.
    if len(texts) == 1:
        return [await embedder.embed_query(texts[0])]
    raw = await embedder.embed_queries(texts)
    if len(raw) != len(texts):
        raise ValueError(f"{len(raw)} vectors for {len(texts)} queries")
    return raw


def first_of_each(
    requests: Sequence[SearchMemoryRequest], modes: Sequence[ResolvedMode]
) -> list[int]:
    """For each request, the index of its first identical copy (itself when it has none)."""
    if len(requests) == 1:  # a single search: nothing to compare (and no dump to pay for)
        return [0]
    first: dict[tuple[str, str], int] = {}
    return [
        first.setdefault((mode, request.model_dump_json()), i)
        for i, (request, mode) in enumerate(zip(requests, modes, strict=True))
    ]


async def all_or_nothing(searches: list[Coroutine[Any, Any, T]]) -> tuple[T, ...]:
    """Run concurrently, in order; on the first error cancel the rest and raise it."""
    if len(searches) == 1:
        return (await searches[0],)
    tasks = [asyncio.ensure_future(search) for search in searches]
    try:
        return tuple(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
