"""What an erasure changes in the index: every version, active or not, whose window held an
erased version.

With contextual indexing a version's tokens and vector hold its neighbours' words, and an
erasure must leave no token or vector derived from erased text. After the erasure's commit
(the erased versions are gone from the store), each sequence an erased version was indexed in
is re-derived:
- its versions active at the head whose window reached an erased version (in a thread, the
  `after` before it and the `before` after it; in a batch, all), within the sequence as it
  is now, as `reindex --rebuild` would derive them (the others never held its words);
- its inactive versions (retired, or a revised entry's former first version). These keep
  the index they had when they left their sequence, which as-of search still reads, so each
  is re-derived within the sequence as it stood at its last active revision
  (`removed_revision - 1`), the erased versions left out: the index it would hold had the
  erased entries never been written. Only those removed after the sequence's earliest erased
  version was written can hold its words; the others are left as they are.
A pass read before a later erasure committed is made again once that one is seen
(indexing.erasure_races). Every token is rewritten first, then (with an embedder) the vectors
re-embedded in place:
derived data, so no revision is made. A stored vector that is not re-embedded would keep the
erased words mixed in, so it is deleted: without an embedder, every stored vector of the
re-derived versions; with one, their vectors of other embedding profiles, and all of theirs
when the re-derivation fails. Missing, the active versions' vectors of the current profile
count as pending and the backfill or `powercontext reindex` fills them; the inactive ones'
are filled by `powercontext reindex --rebuild`, which also repairs a failed re-derivation.

A sequence's members and the revisions each was active in come from two reads: the versions
active at the head, and its inactive ones (`MemoryStore.removed_versions`). `list_versions` as
of `removed_revision - 1` with a thread filter gives the same sequence too, but one listing per
removal revision, and a batch has no filter of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.memory.errors import NotFoundError
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.indexing.erasure_races import while_erased_since
from powercontext.memory.indexing.rebuild import rederive
from powercontext.memory.indexing.removals import derive, had_neighbours, removed_index
from powercontext.memory.indexing.threads import index_sequences, sequence_key
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


def _held(
    sequences: list[list[StoredVersion]], erased: Sequence[ErasedVersion], index: IndexTextConfig
) -> set[int]:
    """Keys of the active versions whose stored vector can hold an erased version's words: in a
    thread, those within a window's reach of one in write order (whether it was active or not:
    a failed earlier re-derivation may have left its words); in a batch, every member (the
    erased versions' group values are gone)."""
    gone: dict[object, list[int]] = {}
    for version in erased:
        gone.setdefault(sequence_key(version), []).append(version.key)
    held: set[int] = set()
    for peers in sequences:
        wanted = sequence_key(peers[0])
        if wanted not in gone:
            continue
        if peers[0].thread is None:
            held.update(version.key for version in peers)
            continue
        order = sorted([*(version.key for version in peers), *gone[wanted]])
        at = {key: position for position, key in enumerate(order)}
        for position in (at[key] for key in gone[wanted]):
            low = max(0, position - index.context_after)
            held.update(order[low : position + index.context_before + 1])
    return held - {key for keys in gone.values() for key in keys}


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
    try:
        count = await _rederive_at(indexer, index, analyzer, scope_id, erased, earliest, head)
    except NotFoundError:
        # A later erasure took some of the versions this pass read: the redo reads again.
        if not await indexer.store.erased_since(scope_id, head):
            raise
        count = 0

    async def redo(now: int) -> None:
        # A later erasure re-derived some of these before this pass stored its older view.
        nonlocal count
        count = await _rederive_at(indexer, index, analyzer, scope_id, erased, earliest, now)

    await while_erased_since(indexer, scope_id, head, redo)
    return count


async def _rederive_at(
    indexer: VectorIndexer,
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    scope_id: str,
    erased: Sequence[ErasedVersion],
    earliest: dict[object, int],
    head: int,
) -> int:
    """One pass of rederive_after_erasure, over the sequences as they are at `head`."""
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
    derived = removed_index(active, removed, index, analyzer, since=earliest)
    sequences = index_sequences(active)
    held = _held(sequences, erased, index)
    for peers in sequences:
        # Only the active versions a window of an erased one reached change: one forget in a
        # thread of thousands of turns re-embeds a few neighbourhoods, not the thread.
        derived.update(derive(peers, held, index, analyzer))
    keys = sorted(held | set(derived))
    vectors = index.context_vector and bool(keys)
    noop = lambda _done, _total: None  # noqa: E731
    try:
        # Every token first, then the vectors: an embedder failing leaves no erased word in
        # any version's tokens.
        count = await rederive(indexer, index, analyzer, scope_id, [], derived, noop)
    except Exception:
        if vectors:
            # Some vectors may still hold erased words: none is better (see the module doc).
            await indexer.store.delete_vectors(scope_id, keys)
        raise
    if vectors:
        # Without a model here, stored vectors (of a process that had one) keep the erased
        # words mixed in; with one, so do those of other models' profiles, never re-embedded.
        keep = None if indexer.embedder is None else indexer.embedder.profile.profile_id
        await indexer.store.delete_vectors(scope_id, keys, keep_profile=keep)
    return count
