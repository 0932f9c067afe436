"""`reindex --rebuild`: re-derive the tokens and vectors of every active version of a scope
under the current index profile, and of every inactive one that sits in a sequence. Derived
data only: no revision is made, no text changes.

Each active version is indexed within the sequence its writes used (its thread in write order,
or its batch), so the result is what writing the scope afresh with today's settings would give.
An inactive one (a thread's first version retired or revised away; a thread-less one in a
batch a metadata key groups) keeps the index as-of search reads: it is re-derived within its
sequence as it stood at its last active revision (`removed_revision - 1`), as an erasure
re-derives it (indexing.erasures), so a rebuild also repairs an erasure whose re-derivation
failed (erased versions are gone from the store, so they are left out).

Writes from other processes go on meanwhile (the scope lock is per process). A turn written
after the listing widens the neighbourhood of the turns before it; its writer rewrites them,
and the rebuild, working from the older listing, may then write over that. So after its pass
the rebuild lists the scope again while the head moves and re-derives the sequences whose
members changed; a write committed after the last look rewrites its neighbours after this.
Entries that a process still running the old settings writes are indexed under those.
"""

from __future__ import annotations

from collections.abc import Callable

from powercontext.memory.indexing.context import IndexTextConfig, embedding_inputs, fts_tokens
from powercontext.memory.indexing.removals import Derived, removed_index
from powercontext.memory.indexing.threads import (
    EmbeddingItem,
    index_sequences,
    sequence_key,
    source_of,
)
from powercontext.memory.indexing.vectors import VectorIndexer, catch_up
from powercontext.memory.ports import StoredVersion
from powercontext.memory.search.analyze import AnalyzerConfig

_TOKEN_CHUNK = 2_000
"""Versions whose tokens are rewritten per write transaction."""


async def rebuild_scope(
    indexer: VectorIndexer,
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    scope_id: str,
    progress: Callable[[int, int], None],
) -> int:
    """Rewrite tokens, then re-embed (with an embedder); returns the versions re-derived.

    Progress counts both passes: tokens for every version, then vectors for every version.
    """
    head = await indexer.store.head(scope_id)
    active = [v async for v in indexer.active_versions(scope_id, head)]
    sequences = index_sequences(active)
    # Thread-less versions sit in a sequence (their batch) only when a metadata key groups it.
    batches = None if index.context_group_key is not None else ()
    removed = await indexer.store.removed_versions(scope_id, threads=None, batches=batches)
    inactive = removed_index(active, removed, index, analyzer)
    count = await rederive(indexer, index, analyzer, scope_id, sequences, inactive, progress)

    async def redo(now: int | None) -> None:
        nonlocal sequences
        later = index_sequences([v async for v in indexer.active_versions(scope_id, now)])
        done = _members(sequences)
        changed = [peers for peers in later if done.get(sequence_key(peers[0])) != _keys(peers)]
        await rederive(indexer, index, analyzer, scope_id, changed, {}, lambda _done, _total: None)
        sequences = later

    await catch_up(indexer.store, scope_id, head, redo)
    return count


def _keys(sequence: list[StoredVersion]) -> list[int]:
    return [version.key for version in sequence]


def _members(sequences: list[list[StoredVersion]]) -> dict[object, list[int]]:
    return {sequence_key(peers[0]): _keys(peers) for peers in sequences}


async def rederive(
    indexer: VectorIndexer,
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    scope_id: str,
    sequences: list[list[StoredVersion]],
    inactive: Derived,
    progress: Callable[[int, int], None],
) -> int:
    """Rewrite the tokens, then the vectors, of each version of `sequences`, each sequence
    indexed as one write would, and of the inactive versions `inactive` holds (derived by
    removals.removed_index); returns the versions re-derived."""
    # Progress is the last argument: tests/integration/test_audit_reindex_cli.py wraps it.
    tokens: list[tuple[int, str]] = [(key, value[0]) for key, value in inactive.items()]
    work: list[EmbeddingItem] = [(key, value[1]) for key, value in inactive.items()]
    for sequence in sequences:
        sources = [source_of(version) for version in sequence]
        keys = [version.key for version in sequence]
        tokens.extend(zip(keys, fts_tokens(sources, index, analyzer), strict=True))
        work.extend(zip(keys, embedding_inputs(sources, index), strict=True))
    embedding = indexer.embedder is not None
    total = len(tokens) * (2 if embedding else 1)
    progress(0, total)
    for start in range(0, len(tokens), _TOKEN_CHUNK):
        chunk = tokens[start : start + _TOKEN_CHUNK]
        await indexer.store.rewrite_index_tokens(scope_id, chunk)
        progress(start + len(chunk), total)
    if embedding and work:
        await indexer.embed_and_store(scope_id, work, progress, start=len(tokens), total=total)
    return len(tokens)
