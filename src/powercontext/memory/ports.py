"""The ports the Memory service depends on. Adapters implement them; the domain imports none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import (
    EmbeddingProfile,
    MemoryChange,
    MemoryHit,
    MemoryRerankDecision,
)
from powercontext.memory.search.fields import FieldWeights
from powercontext.memory.values import ChangeOp

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class VersionFields:
    """What an entry version holds, stored (StoredVersion) or about to be (NewVersion)."""

    entry_id: str
    entry_version_id: str
    version: int
    kind: str
    text: str
    metadata: dict[str, Any]
    _: KW_ONLY
    thread: str | None = None
    occurred_at: datetime | None = None
    """As written; None when the caller gave none (the event time is then `created_at`)."""


@dataclass(frozen=True, slots=True)
class StoredVersion(VersionFields):
    """One immutable entry version as a backend holds it.

    `key` is the backend's stable integer row key: it orders versions by insertion and is the
    id the search channels return. It never leaves the process.
    """

    key: int
    created_at: datetime
    added_revision: int
    removed_revision: int | None

    @property
    def event_time(self) -> datetime:
        return self.occurred_at or self.created_at

    def active_at(self, revision: int) -> bool:
        return self.added_revision <= revision and (
            self.removed_revision is None or self.removed_revision > revision
        )


@dataclass(frozen=True, slots=True)
class NewVersion(VersionFields):
    index_tokens: str
    """Space-joined analyzer tokens the full-text channel indexes (see search.analyze)."""


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """One op of a revision. `add`/`revise`/`reactivate` carry `new`; `revise`/`retire` retire
    `previous_entry_version_id`, which must still be active at commit time (else a conflict)."""

    op: ChangeOp
    new: NewVersion | None = None
    previous_entry_version_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class CommitResult:
    revision: int
    created_at: datetime
    keys: tuple[int, ...] = field(default=())
    """Row keys of the new versions, in the order of the planned changes that carry one."""


@dataclass(frozen=True, slots=True)
class IdempotencyClaim:
    """A write's idempotency key and the hash of its body, recorded in the commit itself."""

    key: str
    body_hash: str


NOTHING_ERASED: tuple[int, ...] = (0,)
"""The version keys an erasure that found nothing to erase records with its idempotency key, at
the head it saw: no row has key 0, so a replay knows not to read that head's changes as its own."""


@dataclass(frozen=True, slots=True)
class IdempotentWrite:
    """What a committed idempotency key recorded: enough to answer a retry with the original
    result (the revision and the row keys of the versions it wrote, in write order)."""

    body_hash: str
    revision: int
    keys: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Tombstone:
    """What remains of an erased entry version: ids and the erasure, never content."""

    entry_id: str
    entry_version_id: str
    version: int
    erased_revision: int
    erased_at: datetime
    actor: str | None


@dataclass(frozen=True, slots=True)
class ErasedVersion:
    """One version an erasure removed, as the erasing transaction read it (for re-deriving
    its neighbours' index, never handed out: it names the thread, not the text)."""

    key: int
    entry_id: str
    entry_version_id: str
    version: int
    added_revision: int
    thread: str | None


@dataclass(frozen=True, slots=True)
class ErasureResult:
    revision: int | None
    """The revision the erasure made; None when nothing was left to erase."""
    erased: tuple[ErasedVersion, ...]


class FtsCandidate(NamedTuple):
    """An entry the full-text channel found: built by the hundred per search, like
    VectorCandidate."""

    key: int
    score: float
    """Backend relevance; only the order matters (best first)."""
    tokens: frozenset[str]
    """The candidate's indexed tokens, for the admission rule's distinct-term count."""


class VectorCandidate(NamedTuple):
    """An entry the vector channel found: a plain pair, built by the hundred per search."""

    key: int
    similarity: float
    """Cosine similarity with the query vector."""


@dataclass(frozen=True, slots=True)
class RevisionQuery:
    """A read of the versions active at one revision of a scope: at most `limit` of them,
    only those matching `where` (applied before the `limit` are chosen)."""

    scope_id: str
    revision: int
    _: KW_ONLY
    limit: int
    where: MemoryFilter | None = None


@dataclass(frozen=True, slots=True)
class VersionPage(RevisionQuery):
    """A page of `list_versions`: ascending by key, after `after_key` (None: from the start)."""

    _: KW_ONLY
    after_key: int | None = None


@dataclass(frozen=True, slots=True)
class FtsQuery(RevisionQuery):
    """A full-text read: versions containing any of `terms` in any field, each field weighted
    as `fields` says (see search.fields; None: the defaults)."""

    terms: Sequence[str]
    _: KW_ONLY
    fields: FieldWeights | None = None
    max_term_share: float | None = None
    """Terms held in their own field by more than this share of the scope's versions are left
    out (None: every term counts). Read from the statistics the backend keeps for BM25 (the
    head's on PostgreSQL, the cached rows' on SQLite); SQLite's `fts5` comparison mode keeps
    none and ignores it."""
    max_term_entries: int | None = None
    """...and so are terms held in their own field by more than this many versions, whatever
    the scope's size (None: no such bound)."""
    common_term_entries: int | None = None
    """Terms held in their own field by more than this many versions find no version by
    themselves: they add to the scores of the versions that hold one of the rarer terms (the
    rarest term always finds versions), so a question of common words scores no posting list
    longer than its rarest term's. Where fewer than `limit` versions hold a rarer term, every
    term finds versions. None: every term always does (the exact BM25 top)."""

    def term_ceiling(self, versions: int) -> float | None:
        """The most versions of a scope of `versions` that may hold a term in its own field
        for it to count (None: every term counts)."""
        bounds = [self.max_term_share * versions] if self.max_term_share is not None else []
        if self.max_term_entries is not None:
            bounds.append(self.max_term_entries)
        return min(bounds, default=None)


@dataclass(frozen=True, slots=True)
class VectorQuery(RevisionQuery):
    """A nearest-neighbour read: versions by cosine similarity of their `profile_id` vector
    with `vector`."""

    profile_id: str
    vector: Vector


@dataclass(frozen=True, slots=True)
class TombstoneQuery:
    """A read of the tombstones of one version (`entry_version_id`), of every version of one
    entry (`entry_id`) or of several entries (`entry_ids`, one read for an import batch) of
    a scope: exactly one of the three is named. Entries' tombstones come oldest first."""

    scope_id: str
    _: KW_ONLY
    entry_id: str | None = None
    entry_version_id: str | None = None
    entry_ids: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        named = (self.entry_id, self.entry_version_id, self.entry_ids)
        if sum(value is not None for value in named) != 1:
            raise ValueError(
                "a tombstone query names one of entry_id, entry_version_id and entry_ids"
            )


@dataclass(frozen=True, slots=True)
class ScopeWrite:
    """A write that makes the next revision of a scope: a compare-and-swap on its head, which
    must still be `expected_head` (None or 0: the scope has no revision yet)."""

    scope_id: str
    expected_head: int | None


@dataclass(frozen=True, slots=True)
class CommitRequest(ScopeWrite):
    """A revision of `changes`, with the idempotency claim of the write that makes it."""

    changes: Sequence[PlannedChange]
    _: KW_ONLY
    idempotency: IdempotencyClaim | None = None


@dataclass(frozen=True, slots=True)
class ErasureRequest(ScopeWrite):
    """What `erase` deletes (`entry_ids`; None: the whole scope) and what its `forget` records
    say (the actor, and a reason that is never stored as content)."""

    entry_ids: Sequence[str] | None
    _: KW_ONLY
    actor: str | None
    reason: str | None
    idempotency: IdempotencyClaim | None = None
    """Recorded in the erasure's transaction (no version keys), as a commit records its own."""


class MemoryStore(Protocol):
    """Durable, revisioned Memory. Every read names one exact revision.

    Implementations must make `commit` an atomic compare-and-swap on the scope head that is
    safe across processes, and must never block the event loop on I/O.
    """

    async def head(self, scope_id: str) -> int | None:
        """The scope's latest revision; None before its first write."""

    async def commit(self, request: CommitRequest) -> CommitResult:
        """Raise RevisionConflictError when the head moved, a retired version is gone, or the
        idempotency key is already recorded in this scope (it is stored in the same
        transaction as the revision, so a committed write always has its key)."""
        ...

    async def idempotent_write(self, scope_id: str, key: str) -> IdempotentWrite | None:
        """The write recorded under `key` in this scope, if any."""
        ...

    async def entry_versions(self, scope_id: str, entry_id: str) -> list[StoredVersion]:
        """Every version of one entry, ascending by version (empty when it does not exist)."""
        ...

    async def latest_version(self, scope_id: str, entry_id: str) -> StoredVersion | None:
        """The newest version of an entry, active or retired; None when it has none."""

    async def entry_heads(
        self, scope_id: str, entry_ids: Sequence[str]
    ) -> dict[str, StoredVersion]:
        """The latest version (active or retired) of each of `entry_ids` that exists here."""
        ...

    async def get_version(self, scope_id: str, entry_version_id: str) -> StoredVersion | None:
        """One entry version by its id; None when the scope holds no such version."""

    async def fetch_versions(self, scope_id: str, keys: Sequence[int]) -> dict[int, StoredVersion]:
        """The versions stored under these row keys (keys without one are left out)."""

    async def list_versions(self, page: VersionPage) -> list[StoredVersion]:
        """Versions active at `page.revision` (and matching `page.where`), ascending by key,
        after `page.after_key`."""
        ...

    async def changes(
        self, scope_id: str, since_revision: int, *, limit: int
    ) -> list[MemoryChange]:
        """The changes of revisions after `since_revision`, oldest first, at most `limit`."""

    async def fts_candidates(self, query: FtsQuery) -> list[FtsCandidate]:
        """Versions active at `query.revision` containing any of its terms, best first (see
        FtsQuery). `query.where` is applied before the top `query.limit` are chosen."""
        ...

    async def vector_candidates(self, query: VectorQuery) -> list[VectorCandidate]:
        """Nearest versions active at `query.revision` by cosine similarity, best first.
        `query.where` is applied before the nearest `query.limit` are chosen."""
        ...

    async def missing_vector_count(self, scope_id: str, revision: int, profile_id: str) -> int:
        """How many versions active at `revision` have no vector of `profile_id`."""
        ...

    async def versions_missing_vectors(
        self, scope_id: str, profile_id: str, *, limit: int
    ) -> list[StoredVersion]:
        """Versions active at the head with no vector of `profile_id`, ascending by key."""
        ...

    async def thread_tail(
        self, scope_id: str, thread: str, *, limit: int, before_key: int | None = None
    ) -> list[StoredVersion]:
        """The last `limit` first versions (version 1) of `thread` active at the head, ascending
        by key: the thread's entries in write order, for contextual indexing. With
        `before_key`, the last of those whose key is smaller (the turns before one)."""
        ...

    async def removed_versions(
        self,
        scope_id: str,
        *,
        threads: Sequence[str] | None,
        batches: Sequence[int] | None,
    ) -> list[StoredVersion]:
        """Versions inactive at the head (retired, or replaced by a revise) of the index
        sequences named: the first versions (version 1) of `threads`, and the thread-less
        versions a revision of `batches` added (None: of every thread, of every batch);
        ascending by key. An erasure and `reindex --rebuild` re-derive them."""
        ...

    async def erased_since(self, scope_id: str, revision: int) -> bool:
        """Whether an erasure of the scope committed after `revision`: a derived index written
        from an older read may hold its words (memory.indexing.erasure_races). Reads only the
        changes after `revision`."""
        ...

    async def delete_vectors(
        self, scope_id: str, keys: Sequence[int], *, keep_profile: str | None = None
    ) -> None:
        """Delete the stored vectors of version `keys`, of every embedding profile but
        `keep_profile` (None: of all): derived data that must not outlive the text it was
        derived from. Keys without a vector are skipped; the versions then count as missing
        their vector (see `missing_vector_count`)."""
        ...

    async def rewrite_index_tokens(self, scope_id: str, items: Sequence[tuple[int, str]]) -> None:
        """Replace the full-text tokens of stored versions (derived data: no revision is made,
        the text is untouched). Unknown keys raise NotFoundError."""
        ...

    async def index_profile(self, scope_id: str) -> str | None:
        """The index profile recorded for the scope, if any."""
        ...

    async def index_profiles(self) -> dict[str, str]:
        """The index profile recorded for each scope that has one."""
        ...

    async def set_index_profile(self, scope_id: str, profile: str) -> None:
        """Record (or replace) the index profile a scope's entries are indexed under."""
        ...

    async def put_vectors(
        self, scope_id: str, profile_id: str, items: Sequence[tuple[int, Vector]]
    ) -> None:
        """Store unit vectors for version keys; a repeated key replaces its vector."""
        ...

    async def scope_ids(self) -> list[str]:
        """Every scope that has a revision."""

    async def active_count(self, scope_id: str, revision: int) -> int:
        """How many entry versions are active at `revision` (0 for an unknown one)."""
        ...

    async def erase(self, request: ErasureRequest) -> ErasureResult:
        """Physically delete every version of `request.entry_ids` (None: of the scope) with
        their tokens and vectors, and any derived row naming them, in one new revision whose
        changes are `forget` records (ids and actor, no content) next to a tombstone per
        version. The same compare-and-swap as `commit` (RevisionConflictError); entry ids with
        no stored version are skipped, and with nothing to erase no revision is made."""
        ...

    async def scrub(self, scope_id: str) -> None:
        """After an erasure and the re-derivation of its neighbours: make the deleted bytes
        unrecoverable as far as the backend can by itself (see each adapter)."""
        ...

    async def tombstones(self, query: TombstoneQuery) -> list[Tombstone]:
        """Tombstones of one entry or of one version, ascending by version."""
        ...

    async def close(self) -> None:
        """Release connections; later calls fail with StorageError. Closing twice is fine."""


@runtime_checkable
class EmbeddingModel(Protocol):
    """Text to vectors of one `profile`; inject one with open_runtime(embedding_model=...)."""

    profile: EmbeddingProfile

    async def embed_documents(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One vector per text, in order, of the profile's dimension."""

    async def embed_query(self, text: str) -> Sequence[float]:
        """The vector of a search query (some models embed queries differently)."""

    async def embed_queries(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """Many queries in one model call (batch search), each as `embed_query` embeds it."""
        ...


@runtime_checkable
class MemoryReranker(Protocol):
    """Selects from a coarse pool; inject one with open_runtime(memory_reranker=...)."""

    policy_id: str

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        """At most `limit` 1-based ranks into `candidates`, best first (RFC: raw ranks, which
        PowerContext normalizes: duplicates, out-of-range and invented ranks are dropped)."""
