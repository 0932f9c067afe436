"""What an erasure changes in the index: every version, active or not, whose window held an
erased version.

With contextual indexing a version's tokens and vector hold its neighbours' words, and an
erasure must leave no token or vector derived from erased text. After the erasure's commit
(the erased versions are gone from the store), each sequence an erased version was indexed in
is re-derived:
- its versions active at the head, within the sequence as it is now, as `reindex --rebuild`
  would derive them;
- its inactive versions (retired, or a revised entry's former first version). These keep
  the index they had when they left their sequence, which as-of search still reads, so each
  is re-derived within the sequence as it stood at its last active revision
  (`removed_revision - 1`), the erased versions left out: the index it would hold had the
  erased entries never been written. Only those removed after the sequence's earliest erased
  version was written can hold its words; the others are left as they are.
Every token is rewritten first, then (with an embedder) the vectors re-embedded in place:
derived data, so no revision is made. Without an embedder vectors are left as they are, as
writes leave them (docs/storage.md).

A sequence's members and the revisions each was active in come from two reads: the versions
active at the head, and its inactive ones (`MemoryStore.removed_versions`). `list_versions` as
of `removed_revision - 1` with a thread filter gives the same sequence too, but one listing per
removal revision, and a batch has no filter of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.memory.filters import MemoryFilter
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.indexing.rebuild import rederive
from powercontext.memory.indexing.removals import Derived, derive, had_neighbours
from powercontext.memory.indexing.threads import EmbeddingItem, index_sequences, sequence_key
from powercontext.memory.indexing.vectors import VectorIndexer
from powercontext.memory.ports import ErasedVersion, StoredVersion, VersionPage
from powercontext.memory.search.analyze import AnalyzerConfig

_PAGE = 1024


def _touched(erased: Sequence[ErasedVersion], index: IndexTextConfig) -> dict[object, int]:
    """Sequence key -> the earliest revision that added one of its erased versions."""
    earliest: dict[object, int] = {}
    for version in erased:
        if had_neighbours(version, index):
            wanted = sequence_key(version)
            earliest[wanted] = min(
                earliest.get(wanted, version.added_revision), version.added_revision
            )
    return earliest


async def _active(
    indexer: VectorIndexer, scope_id: str, head: int, threads: list[str], batches: bool
) -> list[StoredVersion]:
    """The versions active at `head` of the threads named (of the whole scope when a batch was
    touched: a batch has no filter of its own), ascending by key."""
    if batches:
        return [v async for v in indexer.active_versions(scope_id, head)]
    found: list[StoredVersion] = []
    for thread in threads:
        after: int | None = None
        while True:
            page = VersionPage(
                scope_id, head, after_key=after, limit=_PAGE, where=MemoryFilter(threads=(thread,))
            )
            rows = await indexer.store.list_versions(page)
            if not rows:
                break
            found.extend(rows)
            after = rows[-1].key
    return sorted(found, key=lambda version: version.key)


async def rederive_after_erasure(
    indexer: VectorIndexer,
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    scope_id: str,
    erased: Sequence[ErasedVersion],
) -> int:
    """Re-derive every version of the sequences `erased` (just deleted) were indexed in that
    can hold their words; returns how many were re-derived. Raises what the store or the
    embedder raises; the erasure stands either way."""
    earliest = _touched(erased, index)
    head = await indexer.store.head(scope_id)
    if not earliest or head is None:
        return 0
    threads = sorted(
        str(key[1]) for key in earliest if isinstance(key, tuple) and key[0] == "thread"
    )
    batches = sorted(
        int(key[1]) for key in earliest if isinstance(key, tuple) and key[0] == "batch"
    )
    active = [
        version
        for version in await _active(indexer, scope_id, head, threads, bool(batches))
        if sequence_key(version) in earliest
    ]
    removed = await indexer.store.removed_versions(scope_id, threads=threads, batches=batches)
    # A version another process retired since `head` is in both listings: the later wins.
    members: dict[object, dict[int, StoredVersion]] = {}
    for version in (*active, *removed):
        members.setdefault(sequence_key(version), {})[version.key] = version
    derived: Derived = {}
    for wanted, by_key in members.items():
        peers = sorted(by_key.values(), key=lambda version: version.key)
        stale: dict[int, set[int]] = {}  # last active revision -> keys removed after it
        for version in peers:
            gone = version.removed_revision
            if gone is not None and gone > earliest[wanted]:
                stale.setdefault(gone - 1, set()).add(version.key)
        for at, keys in stale.items():
            stood = [version for version in peers if version.active_at(at)]
            derived.update(derive(stood, keys, index, analyzer))
    # Every token first, then the vectors: an embedder failing leaves no erased word in any
    # version's tokens.
    if derived:
        await indexer.store.rewrite_index_tokens(
            scope_id, [(key, value[0]) for key, value in derived.items()]
        )
    noop = lambda _done, _total: None  # noqa: E731
    count = await rederive(indexer, index, analyzer, scope_id, index_sequences(active), noop)
    work: list[EmbeddingItem] = [(key, value[1]) for key, value in derived.items()]
    if indexer.embedder is not None and work:
        await indexer.embed_and_store(scope_id, work, noop)
    return count + len(derived)
