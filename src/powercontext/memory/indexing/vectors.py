"""Vectors for entries: embedded after the text commit, in batches, never losing the text.

A failed embedding leaves the vector pending; `auto` search stays on fts for that scope until
`reindex` fills the gap, and explicit vector modes say so instead of degrading.

What is embedded comes from `indexing.context`: the entry's rendered text and, with
contextual indexing, its neighbourhood: its thread's entries in write order, or (without a
thread) its batch. `reindex` rebuilds that sequence from the store (a thread's first versions
ascending by key; a batch is the versions one revision added), so a vector filled in later
is the vector the writes would have stored; a neighbour retired since is left out, because
reindex sees the sequence as it stands at the head.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from powercontext.memory.errors import CapabilityNotSupportedError, failure_summary
from powercontext.memory.indexing.context import IndexTextConfig, embedding_inputs
from powercontext.memory.indexing.threads import EmbeddingItem, index_sequences, source_of
from powercontext.memory.ports import (
    EmbeddingModel,
    MemoryStore,
    NewVersion,
    StoredVersion,
    Vector,
    VersionPage,
)
from powercontext.memory.vectors import unit_vector

log = logging.getLogger("powercontext.memory")

ProgressCallback = Callable[[int, int], None]
_REINDEX_PAGE = 1024
_RECENT_VECTORS = 1_024
"""Document vectors kept by text (a few per thread being written), about 1.5 MB at 384-d."""
_REINDEX_ROUND = 50_000
"""Missing vectors handled per pass over the scope when context must be rebuilt."""
CATCH_UP_ROUNDS = 16
"""Times a reindex or rebuild reads a scope again because writes moved its head meanwhile;
each round only redoes the neighbourhoods that changed, so a few suffice unless a thread is
written to without pause."""


async def catch_up(
    store: MemoryStore,
    scope_id: str,
    head: int | None,
    redo: Callable[[int | None], Awaitable[None]],
) -> None:
    """Call `redo(new_head)` while writes move the scope's head past `head`, until it stands
    still: a write committed after the last look re-indexes its neighbours after this pass.

    Reindex, rebuild and the backfill take no lock across processes, and a turn written
    meanwhile widens the neighbourhood of the turns before it; its writer re-indexes them,
    possibly before the pass stored its older inputs over that. `redo` re-derives what changed.
    """
    for _ in range(CATCH_UP_ROUNDS):
        now = await store.head(scope_id)
        if now == head:
            return
        head = now
        await redo(head)
    log.warning(
        "scope %r kept changing while it was re-indexed; some neighbourhoods may lack the "
        "newest turns until `powercontext reindex --rebuild`",
        scope_id,
    )


def _unit_mean(parts: Sequence[Vector]) -> Vector:
    total: Vector = np.sum(np.stack(parts), axis=0, dtype=np.float32)
    norm = float(np.linalg.norm(total))
    return total / norm if norm > 0 else parts[0]


@dataclass(slots=True)
class VectorIndexer:
    store: MemoryStore
    embedder: EmbeddingModel | None
    batch_size: int
    index: IndexTextConfig = field(default_factory=IndexTextConfig)
    _recent: OrderedDict[str, Sequence[float]] = field(default_factory=OrderedDict, init=False)

    def drop_recent(self) -> None:
        """Forget the recently embedded texts and their vectors: after an erasure, some of
        them may hold erased words."""
        self._recent.clear()

    def _items(
        self, keyed: Sequence[tuple[int, NewVersion | StoredVersion]]
    ) -> list[EmbeddingItem]:
        """Embedding inputs of one batch (the versions one revision added, in order)."""
        inputs = embedding_inputs([source_of(version) for _, version in keyed], self.index)
        return [(key, texts) for (key, _), texts in zip(keyed, inputs, strict=True)]

    async def embed_new(self, scope_id: str, items: Sequence[tuple[int, NewVersion]]) -> int:
        """Embed freshly committed versions as one batch; returns how many are still pending."""
        return await self.embed_items(scope_id, self._items(items))

    async def embed_items(
        self,
        scope_id: str,
        new: Sequence[EmbeddingItem],
        refreshed: Sequence[EmbeddingItem] = (),
    ) -> int:
        """Embed new versions, then re-embed stored ones whose neighbourhood changed; returns
        how many new versions still lack a vector."""
        if self.embedder is None or not (new or refreshed):
            return 0
        work = [*new, *refreshed]
        done = 0

        def count(finished: int, _total: int) -> None:
            nonlocal done
            done = finished

        try:
            await self.embed_and_store(scope_id, work, count)
        except Exception as exc:  # any provider failure: the text write stands
            log.warning(
                "embedding failed after commit; %d vectors pending (%s)",
                max(len(new) - done, 0),
                failure_summary(exc),
            )
        return max(len(new) - done, 0)

    async def embed_and_store(
        self,
        scope_id: str,
        items: Sequence[EmbeddingItem],
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
            flat = [text for _, texts in batch for text in texts]
            vectors = await self._embed(flat)
            stored: list[tuple[int, Vector]] = []
            cursor = 0
            for key, texts in batch:
                parts = [
                    unit_vector(vector, profile.dimension)
                    for vector in vectors[cursor : cursor + len(texts)]
                ]
                cursor += len(texts)
                stored.append((key, parts[0] if len(parts) == 1 else _unit_mean(parts)))
            await self.store.put_vectors(scope_id, profile.profile_id, stored)
            done += len(batch)
            progress(start + done, total if total is not None else len(items))
        return done

    async def _embed(self, texts: list[str]) -> list[Sequence[float]]:
        """Document vectors, reusing the few most recent: a turn's own text is embedded again
        each time a later turn of its thread widens its neighbourhood."""
        assert self.embedder is not None
        missing = list(dict.fromkeys(t for t in texts if t not in self._recent))
        if missing:
            vectors = await self.embedder.embed_documents(missing)
            if len(vectors) != len(missing):
                raise ValueError("the embedding model returned a different number of vectors")
            for text, vector in zip(missing, vectors, strict=True):
                self._recent[text] = vector
        found = []
        for text in texts:
            found.append(self._recent[text])
            self._recent.move_to_end(text)
        while len(self._recent) > _RECENT_VECTORS:
            self._recent.popitem(last=False)
        return found

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
        report = progress or (lambda _done, _total: None)
        total = await self.pending(scope_id)
        done = 0
        contextual = self.index.contextual and self.index.context_vector
        while True:
            page = _REINDEX_ROUND if contextual else _REINDEX_PAGE
            head = await self.store.head(scope_id)
            missing = await self.store.versions_missing_vectors(
                scope_id, self.embedder.profile.profile_id, limit=page
            )
            if not missing:
                return done
            work = await self._contextual_items(scope_id, missing, head) if contextual else []
            if not work:  # no context to rebuild, or the batch moved on under us
                work = self._items([(v.key, v) for v in missing])
            done += await self.embed_and_store(
                scope_id, work, report, start=done, total=max(total, done + len(work))
            )
            if contextual:
                await self._catch_up(scope_id, head, missing, dict(work))

    async def _catch_up(
        self,
        scope_id: str,
        head: int | None,
        versions: Sequence[StoredVersion],
        stored: dict[int, tuple[str, ...]],
    ) -> None:
        """Re-embed those of `versions` whose neighbourhood changed after `head` (catch_up)."""

        async def redo(now: int | None) -> None:
            current = await self._contextual_items(scope_id, versions, now)
            changed = [(key, inputs) for key, inputs in current if stored.get(key) != inputs]
            if changed:
                await self.embed_and_store(scope_id, changed, lambda _done, _total: None)
                stored.update(changed)

        await catch_up(self.store, scope_id, head, redo)

    async def _contextual_items(
        self, scope_id: str, missing: Sequence[StoredVersion], head: int | None
    ) -> list[EmbeddingItem]:
        """Embedding inputs of those of `missing` active at `head`, each built within its whole
        sequence (its thread, or its batch), from one pass over the versions active there."""
        wanted = {v.key for v in missing}
        threads = {v.thread for v in missing if v.thread is not None}
        revisions = {v.added_revision for v in missing}
        relevant = [
            row
            async for row in self.active_versions(scope_id, head)
            if row.key in wanted or row.thread in threads or row.added_revision in revisions
        ]
        work: list[EmbeddingItem] = []
        for peers in index_sequences(relevant):
            if any(v.key in wanted for v in peers):
                work.extend(
                    item for item in self._items([(v.key, v) for v in peers]) if item[0] in wanted
                )
        return work

    async def active_versions(
        self, scope_id: str, head: int | None = None
    ) -> AsyncIterator[StoredVersion]:
        """Every version active at `head` (by default the scope's head now), ascending by key.
        One revision throughout: a write committed meanwhile is not half seen."""
        if head is None:
            head = await self.store.head(scope_id)
        after: int | None = None
        while head is not None:
            rows = await self.store.list_versions(
                VersionPage(scope_id, head, after_key=after, limit=_REINDEX_PAGE)
            )
            if not rows:
                return
            for row in rows:
                yield row
            after = rows[-1].key
