"""What one write changes in the index: the new entries' tokens and embedding inputs, and the
stored neighbours whose derived index a new entry of their thread widens.

Tokens and vectors are derived data, not the revision: when entry n+1 of a thread arrives,
entries n-1 and n (with a window of 2 after) gain it as a neighbour, so their tokens are
rewritten and their vectors re-embedded in place. Built from the thread's stored tail followed
by the new entries, the result equals what one batch of the whole thread would have indexed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from powercontext.memory.indexing.context import (
    IndexSource,
    IndexTextConfig,
    embedding_inputs,
    fts_tokens,
    neighbourhoods,
)
from powercontext.memory.ports import ErasedVersion, MemoryStore, StoredVersion
from powercontext.memory.search.analyze import AnalyzerConfig

EmbeddingItem = tuple[int, tuple[str, ...]]
log = logging.getLogger("powercontext.memory")


@dataclass(frozen=True, slots=True)
class WriteIndex:
    tokens: list[str]
    """Full-text tokens of each new source, in order."""
    embeddings: list[tuple[str, ...]]
    """Embedding inputs of each new source, in order."""
    rewrites: list[tuple[int, str]]
    """(key, tokens) of stored neighbours whose tokens the new entries widen."""
    re_embed: list[EmbeddingItem]
    """(key, embedding inputs) of stored neighbours whose vectors the new entries change."""


class Indexable(Protocol):
    """A version, new or stored, or a remember request: what the index reads of it."""

    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...
    @property
    def thread(self) -> str | None: ...
    @property
    def occurred_at(self) -> datetime | None: ...


def source_of(version: Indexable) -> IndexSource:
    """What the index sees of a version (or of a request to write one)."""
    return IndexSource(
        kind=version.kind,
        text=version.text,
        metadata=version.metadata,
        thread=version.thread,
        occurred_at=version.occurred_at,
    )


def tail_length(config: IndexTextConfig) -> int:
    """Stored entries of a thread a write must read: the `after` entries it widens, and the
    `before` neighbours each of those has."""
    return config.context_before + config.context_after if config.contextual else 0


def plan_write(
    stored: Sequence[tuple[int, IndexSource]],
    new: Sequence[IndexSource],
    config: IndexTextConfig,
    analyzer: AnalyzerConfig,
) -> WriteIndex:
    """`stored`: the threads' stored tails (key, source), each in key order, before `new`."""
    combined = [source for _, source in stored] + list(new)
    count = len(stored)
    tokens = fts_tokens(combined, config, analyzer)
    inputs = embedding_inputs(combined, config)
    widened = [
        position
        for position, (_, after) in enumerate(neighbourhoods(combined, config)[:count])
        if any(other >= count for other in after)
    ]
    rewrites = [(stored[p][0], tokens[p]) for p in widened] if config.context_fts else []
    re_embed = [(stored[p][0], inputs[p]) for p in widened] if config.context_vector else []
    return WriteIndex(
        tokens=tokens[count:], embeddings=inputs[count:], rewrites=rewrites, re_embed=re_embed
    )


def index_sequences(versions: Sequence[StoredVersion]) -> list[list[StoredVersion]]:
    """Active versions (ascending by key) grouped the way their writes indexed them: a
    thread's first versions in write order; the thread-less versions one revision added (a
    batch); a revised or reactivated version of a thread entry alone."""
    groups: dict[object, list[StoredVersion]] = {}
    for version in versions:
        groups.setdefault(sequence_key(version), []).append(version)
    return list(groups.values())


def sequence_key(version: StoredVersion | ErasedVersion) -> object:
    """The sequence a version was indexed in (see index_sequences)."""
    if version.thread is None:
        return ("batch", version.added_revision)
    if version.version == 1:
        return ("thread", version.thread)
    return ("alone", version.key)


class ThreadIndexer:
    """The store side of a write's index: the threads' tails in, the neighbours' tokens out."""

    def __init__(self, store: MemoryStore, index: IndexTextConfig, analyzer: AnalyzerConfig):
        self.store = store
        self.index = index
        self.analyzer = analyzer

    async def plan(self, scope_id: str, sources: Sequence[IndexSource]) -> WriteIndex:
        """Call under the scope's write lock, so the tails are the ones the commit extends."""
        limit = tail_length(self.index)
        tails: list[tuple[int, IndexSource]] = []
        threads = dict.fromkeys(s.thread for s in sources if s.thread is not None)
        for thread in threads if limit else ():
            for stored in await self.store.thread_tail(scope_id, thread, limit=limit):
                tails.append((stored.key, source_of(stored)))
        return plan_write(tails, sources, self.index, self.analyzer)

    async def rewrite_neighbours(self, scope_id: str, index: WriteIndex) -> None:
        """The earlier entries' tokens: derived data, so a failure leaves the write standing
        (their tokens lack the new neighbour until `reindex --rebuild`)."""
        if not index.rewrites:
            return
        try:
            await self.store.rewrite_index_tokens(scope_id, index.rewrites)
        except Exception as exc:
            log.warning(
                "rewriting the tokens of %d neighbours failed after commit (%s)",
                len(index.rewrites),
                type(exc).__name__,
            )
