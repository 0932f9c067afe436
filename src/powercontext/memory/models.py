"""Memory requests, entries, citations, hits, pages and the rerank trace.

Every model is frozen: a hit or citation handed to a caller can never drift from the
entry version it names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt
from pydantic_core import PydanticCustomError

from powercontext.memory.filters import MemoryFilter
from powercontext.memory.values import (
    MAX_REVISION,
    ChangeOp,
    Channel,
    DegradedCause,
    EntryText,
    IdempotencyKey,
    Kind,
    Metadata,
    OccurredAt,
    QueryText,
    Reason,
    RerankStatus,
    ResolvedMode,
    ScopeId,
    SearchMode,
    Thread,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EmbeddingProfile(_Frozen):
    """Identity of a vector space: vectors of different profiles are never compared."""

    profile_id: str = Field(min_length=1, max_length=256)
    dimension: int = Field(ge=1, le=8192)
    normalization: Literal["unit", "none"] = "unit"


class MemoryRef(_Frozen):
    """One exact revision of one scope's Memory."""

    scope_id: ScopeId
    revision: int = Field(ge=1)


class MemoryCitation(_Frozen):
    """Names one immutable entry version as seen at one revision; `get` resolves it forever."""

    memory_ref: MemoryRef
    entry_id: str
    entry_version_id: str


class RememberMemoryRequest(_Frozen):
    """Remember one entry (or, in `remember_many`, one of a batch written as one revision)."""

    kind: Kind = "fact"
    text: EntryText
    metadata: Metadata = Field(default_factory=dict)
    thread: Thread | None = None
    """The conversation, session or document the entry belongs to. Entries of one thread are
    indexed with their neighbours in write order (contextual indexing)."""
    occurred_at: OccurredAt | None = None
    """When the remembered event happened; None means the write time."""
    expected_revision: int | None = Field(default=None, ge=0, le=MAX_REVISION)
    idempotency_key: IdempotencyKey | None = None
    reason: Reason | None = None


class ReviseMemoryRequest(_Frozen):
    """Write a new version of the cited entry; the citation must name its latest version."""

    citation: MemoryCitation
    text: EntryText
    kind: Kind | None = None
    metadata: Metadata | None = None
    reason: Reason | None = None
    expected_revision: int | None = Field(default=None, ge=0, le=MAX_REVISION)
    idempotency_key: IdempotencyKey | None = None


class RetireMemoryRequest(_Frozen):
    """Make the cited entry inactive from the next revision; its versions stay citable."""

    citation: MemoryCitation
    reason: Reason | None = None
    expected_revision: int | None = Field(default=None, ge=0, le=MAX_REVISION)
    idempotency_key: IdempotencyKey | None = None


class ReactivateMemoryRequest(_Frozen):
    """Make a retired entry active again, as a new version of the cited one."""

    citation: MemoryCitation
    reason: Reason | None = None
    expected_revision: int | None = Field(default=None, ge=0, le=MAX_REVISION)
    idempotency_key: IdempotencyKey | None = None


def _no_bool_or_text(value: Any) -> Any:
    # Lax pydantic reads `limit=True` as 1 and `min_score="2"` as 2.0; the wire refuses both
    # (server.schemas.JsonInt, MinScore), and an in-process search must not answer otherwise.
    if isinstance(value, bool | str):
        raise PydanticCustomError(
            "number_type",
            "Input should be a number, not {type}",
            {"type": type(value).__name__},
        )
    return value


_SearchNumber = BeforeValidator(_no_bool_or_text)


class SearchMemoryRequest(_Frozen):
    """A search of one scope at one exact revision; `limit` is the most final hits."""

    query: QueryText
    limit: Annotated[int, _SearchNumber] = Field(default=10, ge=1, le=100)
    mode: SearchMode = "auto"
    revision: Annotated[int | None, _SearchNumber] = Field(default=None, ge=1, le=MAX_REVISION)
    """As-of search: exactly what the scope held at this revision (default the head)."""
    min_similarity: Annotated[float | None, _SearchNumber] = Field(default=None, ge=-1.0, le=1.0)
    """Vector channel floor on cosine similarity (default the deployment's min_similarity)."""
    min_score: Annotated[float | None, _SearchNumber] = Field(default=None, allow_inf_nan=False)
    """Full-text channel floor on the raw BM25 score (default none)."""
    filter: MemoryFilter | None = None
    """Only versions matching it are candidates, in every channel, before its top-k."""


class MemoryEntry(_Frozen):
    """One immutable entry version."""

    citation: MemoryCitation
    entry_id: str
    entry_version_id: str
    version: int = Field(ge=1)
    kind: str
    text: str
    metadata: dict[str, Any]
    created_at: datetime
    active: bool = True
    thread: str | None = None
    occurred_at: datetime | None = None
    """When the event happened: the value written, else the write time (None only from an
    older server)."""


class ChannelScore(_Frozen):
    """Why a hit was found by one channel: its rank there (1 = best among the candidates the
    channel admitted) and the channel's raw score (`fts`: BM25, higher is better; `vector`:
    cosine similarity with the query)."""

    channel: Channel
    rank: int = Field(ge=1)
    score: float


class MemoryHit(_Frozen):
    """One search result: an exact entry version, its fused score and the channels that found it."""

    memory_ref: MemoryRef
    entry_id: str
    entry_version_id: str
    kind: str
    text: str
    metadata: dict[str, Any]
    score: float
    matched_by: tuple[Channel, ...]
    thread: str | None = None
    occurred_at: datetime | None = None
    explain: tuple[ChannelScore, ...] = ()
    """Per channel that found the hit: its rank and raw score there (`score` is the fused one)."""

    @property
    def citation(self) -> MemoryCitation:
        """The citation of this hit's entry version, for `get`, `revise` and the like."""
        return MemoryCitation(
            memory_ref=self.memory_ref,
            entry_id=self.entry_id,
            entry_version_id=self.entry_version_id,
        )


class InferenceUsage(_Frozen):
    """Portable usage: providers that report no tokens leave them None."""

    requests: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    documents: int | None = None
    """Documents sent to a dedicated rerank endpoint (which reports no chat tokens)."""


class MemoryRerankDecision(_Frozen):
    """What a reranker returns: raw 1-based ranks into the pool, before normalization."""

    selected_ranks: tuple[StrictInt, ...]
    """Strict: `True` is an int in Python and "2" or 2.0 would coerce, but none is a rank."""
    usage: InferenceUsage = InferenceUsage()
    truncated_ranks: tuple[int, ...] = ()
    degraded: bool = False
    """Fail-open only: the provider failed and `selected_ranks` is the coarse first k."""
    degraded_cause: DegradedCause = "provider_error"
    """When `degraded`: an outage, or output that stayed invalid (e.g. a poisoned entry)."""
    cache_hit: bool = False
    """The decision was reused from the rerank cache; no provider call was made."""


class MemoryRerankTrace(_Frozen):
    """In-process diagnostics of one rerank. Holds candidate text: handle like search output."""

    policy_id: str
    candidate_hits: tuple[MemoryHit, ...]
    selected_ranks: tuple[int, ...]
    discarded_rank_count: int
    discarded_ranks: tuple[int, ...]
    used_fallback: bool
    latency_ms: float
    usage: InferenceUsage
    truncated_ranks: tuple[int, ...] = ()
    rerank_status: RerankStatus = "applied"
    cache_hit: bool = False
    candidate_policy_id: str | None = None
    """The candidate policy that sized the pool (fixed or by query class)."""
    query_class: str | None = None
    """The query's class under `powercontext.memory.candidates.by_class.v2`; else None."""
    candidate_limit: int | None = None
    """The candidate limit the policy chose for this query; the pool holds
    max(request limit, this) candidates."""

    def redacted(self) -> RedactedRerankTrace:
        """The trace without candidate text, ids or scores: safe to hand to an HTTP client."""
        return RedactedRerankTrace(
            policy_id=self.policy_id,
            rerank_status=self.rerank_status,
            candidate_count=len(self.candidate_hits),
            selected_ranks=self.selected_ranks,
            discarded_rank_count=self.discarded_rank_count,
            used_fallback=self.used_fallback,
            latency_ms=self.latency_ms,
            usage=self.usage,
            truncated_ranks=self.truncated_ranks,
            cache_hit=self.cache_hit,
            candidate_policy_id=self.candidate_policy_id,
            query_class=self.query_class,
            candidate_limit=self.candidate_limit,
        )


class RedactedRerankTrace(_Frozen):
    """What a rerank did, without any candidate text: ranks are 1-based into the coarse pool."""

    policy_id: str
    rerank_status: RerankStatus
    candidate_count: int
    selected_ranks: tuple[int, ...]
    discarded_rank_count: int
    used_fallback: bool
    latency_ms: float
    usage: InferenceUsage
    truncated_ranks: tuple[int, ...] = ()
    cache_hit: bool = False
    candidate_policy_id: str | None = None
    query_class: str | None = None
    candidate_limit: int | None = None


class MemorySearchPage(_Frozen):
    """A search's hits, the revision they were read at, the mode served and the rerank trace."""

    memory_ref: MemoryRef | None
    mode: ResolvedMode
    hits: tuple[MemoryHit, ...]
    rerank: MemoryRerankTrace | None = None
    rerank_status: RerankStatus | None = "disabled"
    """`disabled` when no rerank call was made (reranking off, or an empty coarse pool). None
    only from the SDK, when the server did not report it (see `include_rerank`)."""
    rerank_redacted: RedactedRerankTrace | None = None
    """Over HTTP only, when the search asked for `include_rerank="redacted"`."""


class MemoryWriteResult(_Frozen):
    """The revision a mutation created and the entry versions it wrote."""

    memory_ref: MemoryRef
    entries: tuple[MemoryEntry, ...]
    vectors_pending: int = 0

    @property
    def citations(self) -> tuple[MemoryCitation, ...]:
        """The citations of the written entry versions, in write order."""
        return tuple(entry.citation for entry in self.entries)


class MemoryChange(_Frozen):
    """One change of the change log: what a revision did to one entry."""

    revision: int
    op: ChangeOp
    entry_id: str
    entry_version_id: str
    previous_entry_version_id: str | None = None
    reason: str | None = None
    created_at: datetime
    actor: str | None = None
    """Who made an erasure (`forget` changes): an API key's fingerprint, or the local caller."""


class MemoryChangesPage(_Frozen):
    """Changes after a revision; pass `next_since_revision` to read the next page."""

    memory_ref: MemoryRef | None
    changes: tuple[MemoryChange, ...]
    next_since_revision: int


class MemoryEntriesPage(_Frozen):
    """Active entries at one revision; pass `next_cursor` to read the next page."""

    memory_ref: MemoryRef | None
    entries: tuple[MemoryEntry, ...]
    next_cursor: str | None = None
