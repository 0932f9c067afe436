"""Vectors for entries: embedded after the text commit, in batches, never losing the text.

A failed embedding leaves the vector pending; `auto` search stays on fts for that scope until
`reindex` fills the gap, and explicit vector modes say so instead of degrading.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from powercontext.memory.errors import CapabilityNotSupportedError
from powercontext.memory.ports import EmbeddingModel, MemoryStore, NewVersion
from powercontext.memory.vectors import unit_vector

log = logging.getLogger("powercontext.memory")

ProgressCallback = Callable[[int, int], None]
_REINDEX_PAGE = 1024


class VectorIndexer:
    def __init__(
        self, store: MemoryStore, embedder: EmbeddingModel | None, batch_size: int
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch_size = batch_size

    async def embed_new(self, scope_id: str, items: Sequence[tuple[int, NewVersion]]) -> int:
        """Embed freshly committed versions; returns how many vectors are still pending."""
        if self.embedder is None or not items:
            return 0
        texts = [(key, new.text) for key, new in items]
        done = 0

        def count(finished: int, _total: int) -> None:
            nonlocal done
            done = finished

        try:
            await self._embed_and_store(scope_id, texts, count)
        except Exception as exc:  # any provider failure: the text write stands
            log.warning(
                "embedding failed after commit; %d vectors pending (%s)",
                len(texts) - done,
                type(exc).__name__,
            )
        return len(texts) - done

    async def _embed_and_store(
        self,
        scope_id: str,
        items: Sequence[tuple[int, str]],
        progress: ProgressCallback,
        *,
        start: int = 0,
        total: int | None = None,
    ) -> int:
        assert self.embedder is not None
        profile = self.embedder.profile
        done = 0
        for offset in range(0, len(items), self.batch_size):
            batch = items[offset : offset + self.batch_size]
            vectors = await self.embedder.embed_documents([text for _, text in batch])
            if len(vectors) != len(batch):
                raise ValueError("the embedding model returned a different number of vectors")
            await self.store.put_vectors(
                scope_id,
                profile.profile_id,
                [
                    (key, unit_vector(vector, profile.dimension))
                    for (key, _), vector in zip(batch, vectors, strict=True)
                ],
            )
            done += len(batch)
            progress(start + done, total if total is not None else len(items))
        return done

    async def pending(self, scope_id: str) -> int:
        if self.embedder is None:
            return 0
        head = await self.store.head(scope_id)
        if head is None:
            return 0
        return await self.store.missing_vector_count(
            scope_id, head, self.embedder.profile.profile_id
        )

    async def reindex(self, scope_id: str, progress: ProgressCallback | None = None) -> int:
        """Embed every active entry lacking a vector of the current profile; returns the count."""
        if self.embedder is None:
            raise CapabilityNotSupportedError(
                "reindex needs an embedding model; configure "
                "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL"
            )
        total = await self.pending(scope_id)
        done = 0
        while True:
            batch = await self.store.versions_missing_vectors(
                scope_id, self.embedder.profile.profile_id, limit=_REINDEX_PAGE
            )
            if not batch:
                return done
            done += await self._embed_and_store(
                scope_id,
                [(v.key, v.text) for v in batch],
                progress or (lambda _done, _total: None),
                start=done,
                total=max(total, done + len(batch)),
            )
