"""A derived index written from a read older than an erasure: re-derived once it is seen.

A write commits its versions, then rewrites its neighbours' tokens and embeds vectors; an
erasure commits, then re-derives the index of the erased versions' neighbours. Neither holds a
lock across processes (nor, within one, across its derived writes), so one can land after the
other from an older read:
- a write committed before an erasure stores its neighbours' index, built with the erased
  turn's words, after the erasure re-derived them;
- an erasure's re-derivation, read before a second erasure committed, stores the second's
  erased words after the second re-derived them.

Each of those writers asks the store afterwards whether an erasure committed after the
revision it read (`MemoryStore.erased_since`, a few rows of the change log) and, while one
has, derives what it wrote again from the scope as it is now. The read that check makes comes
after its own derived writes, so an erasure it does not see re-derives after them. Only an
erasure triggers it: a plain write committed meanwhile rewrites the neighbours it widens
itself, and checking for it on every write would redo the embeddings of every concurrent one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.indexing.removals import (
    Derived,
    derive,
    had_neighbours,
    store_derived,
    stretch,
)
from powercontext.memory.indexing.threads import index_sequences
from powercontext.memory.indexing.vectors import CATCH_UP_ROUNDS, VectorIndexer
from powercontext.memory.search.analyze import AnalyzerConfig

log = logging.getLogger("powercontext.memory")


async def while_erased_since(
    indexer: VectorIndexer, scope_id: str, revision: int, redo: Callable[[int], Awaitable[None]]
) -> None:
    """Call `redo(head)` while an erasure has committed after the revision last read."""
    store = indexer.store
    for _ in range(CATCH_UP_ROUNDS):
        if not await store.erased_since(scope_id, revision):
            return
        head = await store.head(scope_id)
        if head is None:
            return
        revision = head
        await redo(head)
    log.warning(
        "scope %r kept being erased while an index was derived; run `powercontext reindex "
        "--rebuild` so that no neighbour keeps an erased turn's words",
        scope_id,
    )


async def settle_write(
    indexer: VectorIndexer,
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    scope_id: str,
    revision: int,
    keys: Iterable[int],
) -> None:
    """After a write committed at `revision` stored the derived index of `keys` (its new
    versions and the neighbours it widened): re-derive them while an erasure has committed
    since. Raises what the store or the embedder raises."""
    wanted = set(keys)
    if not wanted or not index.contextual or not (index.context_fts or index.context_vector):
        return

    async def redo(head: int) -> None:
        await rederive_keys(indexer, index, analyzer, scope_id, head, wanted)

    await while_erased_since(indexer, scope_id, revision, redo)


async def rederive_keys(
    indexer: VectorIndexer,
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    scope_id: str,
    head: int,
    keys: set[int],
) -> int:
    """Re-derive those of `keys` active at `head` that sit in a sequence, each within its
    sequence as it is at `head`; returns how many were re-derived."""
    stored = await indexer.store.fetch_versions(scope_id, sorted(keys))
    members = [
        version
        for version in stored.values()
        if version.active_at(head) and had_neighbours(version, index)
    ]
    derived: Derived = {}
    for group in index_sequences(sorted(members, key=lambda version: version.key)):
        peers = await stretch(indexer, index, scope_id, head, group[0], to_end=True)
        derived.update(derive(peers, {version.key for version in group}, index, analyzer))
    await store_derived(indexer, index, scope_id, derived)
    return len(derived)
