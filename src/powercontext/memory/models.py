"""Memory requests, entries, citations, hits, pages and the rerank trace.

Every model is frozen: a hit or citation handed to a caller can never drift from the
entry version it names.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_TEXT_BYTES = 8192
MAX_QUERY_BYTES = 8192
MAX_METADATA_BYTES = 16384
MAX_KIND_CHARS = 64
MAX_SCOPE_CHARS = 256
MAX_REASON_CHARS = 1024
MAX_THREAD_CHARS = 256

SearchMode = Literal["auto", "fts", "vector", "hybrid"]
ResolvedMode = Literal["fts", "vector", "hybrid"]
Channel = Literal["fts", "vector"]
ChangeOp = Literal["add", "revise", "retire", "reactivate"]
RerankStatus = Literal[
    "applied",
    "fallback_no_valid_rank",
    "degraded_provider_error",
    "degraded_invalid_output",
    "disabled",
]
"""What the rerank stage did: reranked, fell back (RFC: no valid rank), served the coarse order
after a provider failure or invalid output (fail-open only), or made no rerank call at all."""
DegradedCause = Literal["provider_error", "invalid_output"]
"""Why a fail-open rerank served the coarse order: no answer in time, or an unusable one."""


def normalize_text(value: str) -> str:
    """NFC and strip: the one canonical form of stored text and of queries."""
    return unicodedata.normalize("NFC", value).strip()


def _check_unicode(value: str, what: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} must be valid Unicode (no lone surrogates)") from exc
    if "\x00" in value:
        raise ValueError(f"{what} must not contain NUL characters")
    return value


def _bounded_text(what: str, max_bytes: int) -> Any:
    def check(value: str) -> str:
        value = normalize_text(_check_unicode(value, what))
        if not value:
            raise ValueError(f"{what} must not be blank")
        size = len(value.encode("utf-8"))
        if size > max_bytes:
            raise ValueError(f"{what} is {size} UTF-8 bytes; at most {max_bytes} are allowed")
        return value

    return AfterValidator(check)


def _check_scope(value: str) -> str:
    _check_unicode(value, "scope_id")
    if not value.strip():
        raise ValueError("scope_id must not be blank")
    return value


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata must be a JSON object: {exc}") from exc
    _check_unicode(encoded, "metadata")
    size = len(encoded.encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(
            f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES} are allowed"
        )
    return value


def _check_kind(value: str) -> str:
    value = normalize_text(_check_unicode(value, "kind"))
    if not value:
        raise ValueError("kind must not be blank")
    return value


ScopeId = Annotated[
    str, Field(min_length=1, max_length=MAX_SCOPE_CHARS), AfterValidator(_check_scope)
]
EntryText = Annotated[str, _bounded_text("text", MAX_TEXT_BYTES)]
QueryText = Annotated[str, _bounded_text("query", MAX_QUERY_BYTES)]
Kind = Annotated[str, Field(max_length=MAX_KIND_CHARS), AfterValidator(_check_kind)]


def _check_thread(value: str) -> str:
    value = normalize_text(_check_unicode(value, "thread"))
    if not value:
        raise ValueError("thread must not be blank")
    return value


def _check_occurred_at(value: datetime) -> datetime:
    # A naive time is read as UTC, so every stored time compares with every other.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


Metadata = Annotated[dict[str, Any], AfterValidator(_check_metadata)]
Thread = Annotated[str, Field(max_length=MAX_THREAD_CHARS), AfterValidator(_check_thread)]
"""The conversation, session or document an entry belongs to; neighbours are found by it."""
OccurredAt = Annotated[datetime, AfterValidator(_check_occurred_at)]
"""When the remembered event happened (UTC); defaults to the write time."""
Reason = Annotated[str, Field(max_length=MAX_REASON_CHARS)]
MAX_IDEMPOTENCY_KEY_CHARS = 256


def _check_idempotency_key(value: str) -> str:
    _check_unicode(value, "idempotency_key")
    if not value.strip():
        raise ValueError("idempotency_key must not be blank")
    return value


IdempotencyKey = Annotated[
    str,
    Field(min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS),
    AfterValidator(_check_idempotency_key),
]
"""A client-chosen key: a retry with the same key and body returns the original result."""


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
    kind: Kind = "fact"
    text: EntryText
    metadata: Metadata = Field(default_factory=dict)
    thread: Thread | None = None
    """The conversation, session or document the entry belongs to. Entries of one thread are
    indexed with their neighbours in write order (contextual indexing)."""
    occurred_at: OccurredAt | None = None
    """When the remembered event happened; None means the write time."""
    expected_revision: int | None = Field(default=None, ge=0)
    idempotency_key: IdempotencyKey | None = None
    reason: Reason | None = None


class ReviseMemoryRequest(_Frozen):
    citation: MemoryCitation
    text: EntryText
    kind: Kind | None = None
    metadata: Metadata | None = None
    reason: Reason | None = None
    expected_revision: int | None = Field(default=None, ge=0)
    idempotency_key: IdempotencyKey | None = None


class RetireMemoryRequest(_Frozen):
    citation: MemoryCitation
    reason: Reason | None = None
    expected_revision: int | None = Field(default=None, ge=0)
    idempotency_key: IdempotencyKey | None = None


class ReactivateMemoryRequest(_Frozen):
    citation: MemoryCitation
    reason: Reason | None = None
    expected_revision: int | None = Field(default=None, ge=0)
    idempotency_key: IdempotencyKey | None = None


class SearchMemoryRequest(_Frozen):
    query: QueryText
    limit: int = Field(default=10, ge=1, le=100)
    mode: SearchMode = "auto"
    revision: int | None = Field(default=None, ge=1)
    """As-of search: exactly what the scope held at this revision (default the head)."""
    min_similarity: float | None = Field(default=None, ge=-1.0, le=1.0)
    """Vector channel floor on cosine similarity (default the deployment's min_similarity)."""
    min_score: float | None = Field(default=None, allow_inf_nan=False)
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

    selected_ranks: tuple[int, ...]
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
    """The candidate limit the policy chose for this query."""

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
        return tuple(entry.citation for entry in self.entries)


class MemoryChange(_Frozen):
    revision: int
    op: ChangeOp
    entry_id: str
    entry_version_id: str
    previous_entry_version_id: str | None = None
    reason: str | None = None
    created_at: datetime


class MemoryChangesPage(_Frozen):
    memory_ref: MemoryRef | None
    changes: tuple[MemoryChange, ...]
    next_since_revision: int


class MemoryEntriesPage(_Frozen):
    memory_ref: MemoryRef | None
    entries: tuple[MemoryEntry, ...]
    next_cursor: str | None = None


# The filter model uses this module's field types (Kind), so it is imported last and the
# request that names it is completed here.
from powercontext.memory.filters import MemoryFilter  # noqa: E402

SearchMemoryRequest.model_rebuild()
