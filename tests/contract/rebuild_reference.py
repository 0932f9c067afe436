"""The rebuild as the reference: helpers of the contract tests that check an operation leaves
the contextual index exactly as `reindex --rebuild` derives it (every mode, every revision
asked, the channels' raw scores included)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import MemoryEntry, RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.ports import MemoryStore
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService


def context_service(store: MemoryStore, index: IndexTextConfig | None = None) -> MemoryService:
    """Contextual indexing (±2 unless given), the offline hash embedder, no similarity floor."""
    index = index or IndexTextConfig(context_before=2, context_after=2)
    config = SearchConfig(min_similarity=-1.0, index=index)
    return MemoryService(store, embedder=HashingEmbedder(dimension=64), config=config)


async def write_turns(memory: ScopedMemory, turns: Sequence[str]) -> list[MemoryEntry]:
    """One remember per turn, in thread `chat`: neighbours are rewritten as turns arrive."""
    written = []
    for text in turns:
        result = await memory.remember(RememberMemoryRequest(text=text, thread="chat"))
        written.append(result.entries[0])
    return written


async def searches(
    memory: ScopedMemory, queries: Sequence[str], revisions: list[int | None]
) -> list[Any]:
    answers = []
    for revision in revisions:
        for mode in ("fts", "vector", "hybrid"):
            for query in queries:
                request = SearchMemoryRequest(
                    query=query,
                    mode=mode,  # type: ignore[arg-type]
                    revision=revision,
                    limit=20,
                )
                page = await memory.search(request)
                # The channels' raw scores (BM25, cosine), not only the fused ranks.
                hits = [
                    (
                        h.entry_id,
                        round(h.score, 9),
                        [(c.channel, round(c.score, 6)) for c in h.explain],
                    )
                    for h in page.hits
                ]
                answers.append((revision, mode, query, hits))
    return answers


async def same_as_rebuild(
    service: MemoryService, scope: str, queries: Sequence[str], revisions: list[int | None]
) -> None:
    """Every search answers the same before and after a rebuild, which makes no revision."""
    memory = service.for_scope(scope)
    head = await memory.head()
    before = await searches(memory, queries, revisions)
    await service.rebuild(scope)
    assert await memory.head() == head  # derived data only: no revision
    assert await searches(memory, queries, revisions) == before


async def found(memory: ScopedMemory, query: str, revision: int | None = None) -> list[str]:
    """The texts a full-text search finds (at most 20)."""
    request = SearchMemoryRequest(query=query, mode="fts", revision=revision, limit=20)
    return [hit.text for hit in (await memory.search(request)).hits]
