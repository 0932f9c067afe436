"""The HTTP v1 wire models of search: the requests (one search, a batch at one revision) and
the answer (hits, their per-channel explanation, the redacted rerank trace)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from powercontext.memory.filters import MemoryFilter
from powercontext.memory.values import (
    MAX_QUERY_BYTES,
    Channel,
    RerankStatus,
    ResolvedMode,
    SearchMode,
)
from powercontext.server.schemas import (
    AsOfRevision,
    CitationModel,
    JsonInt,
    MemoryRefModel,
    MinScore,
    MinSimilarity,
    WireQueryText,
    WireScopeId,
    _int_field,
    _scope_field,
    _Wire,
    stripped_text_field,
)


def _query_field() -> Any:
    return stripped_text_field(
        MAX_QUERY_BYTES,
        f"The query; not blank; at most {MAX_QUERY_BYTES} UTF-8 bytes once leading and "
        "trailing whitespace is stripped.",
    )


class SearchRequest(_Wire):
    """Search one scope at its current head revision, or as of an older one."""

    scope_id: WireScopeId = _scope_field()
    query: WireQueryText = _query_field()
    limit: JsonInt = _int_field(
        10,
        ge=1,
        le=100,
        description="The maximum number of final hits (after reranking, when enabled).",
    )
    mode: SearchMode = Field(
        default="auto",
        description=(
            "`fts` (full text), `vector`, `hybrid` (both, fused with RRF) or `auto` (hybrid "
            "when every active entry has a vector of the current embedding profile, else fts). "
            "An explicit `vector` or `hybrid` that the deployment cannot serve answers 422 "
            "capability_not_supported; it is never silently downgraded."
        ),
    )
    include_rerank: Literal["none", "redacted"] = Field(
        default="none",
        description=(
            "`redacted`: add the rerank trace without candidate text (`rerank` in the "
            "response: selected ranks, counts, status, latency, usage, policy id, cache hit). "
            "`none` (default): no trace."
        ),
    )
    revision: AsOfRevision = Field(
        default=None,
        description="As-of search: exactly what the scope held at this revision (default the "
        "head); hits cite it. 404 when the scope has not reached it.",
    )
    min_similarity: MinSimilarity = Field(
        default=None,
        description="Vector channel floor on cosine similarity, applied before fusion "
        "(default the deployment's POWERCONTEXT_SERVER_RUNTIME_SEARCH_MIN_SIMILARITY).",
    )
    filter: MemoryFilter | None = Field(
        default=None,
        description="Only entries matching it are candidates, in every channel, before its "
        "top-k: a filtered search returns `limit` hits whenever that many match. `kinds` (any "
        "of), `metadata` (per top-level key: `eq`, `one_of`, `gt`/`gte`/`lt`/`lte`, `exists`; "
        "JSON values compare by type), `created_after` (inclusive) / `created_before`.",
    )
    min_score: MinScore = Field(
        default=None,
        description="Full-text channel floor on the raw BM25 score (see `explain`), applied "
        "before fusion (default none).",
    )


class BatchSearchItem(_Wire):
    """One search of a batch: the fields of a single search, without scope or trace option."""

    query: WireQueryText = _query_field()
    limit: JsonInt = _int_field(10, ge=1, le=100, description="As in a single search.")
    mode: SearchMode = Field(default="auto", description="As in a single search.")
    filter: MemoryFilter | None = Field(
        default=None, description="As in a single search, for this search only."
    )
    min_score: MinScore = Field(
        default=None, description="As in a single search (full-text floor), for this search only."
    )
    min_similarity: MinSimilarity = Field(
        default=None, description="As in a single search (vector floor), for this search only."
    )


class BatchSearchRequest(_Wire):
    """Several searches of one scope in one call, all answered at one exact revision."""

    scope_id: WireScopeId = _scope_field()
    searches: list[BatchSearchItem] = Field(
        min_length=1,
        description=(
            "The searches, answered in this order. At most "
            "POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_QUERIES (default 64); more answers 422 "
            "validation_error naming the limit. The queries are embedded in one model call "
            "and reranks run concurrently, at most "
            "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MAX_REQUESTS at once."
        ),
    )
    include_rerank: Literal["none", "redacted"] = Field(
        default="none", description="As in a single search, for every page."
    )
    revision: AsOfRevision = Field(
        default=None,
        description="As-of search for every search of the batch (one revision per batch; "
        "default the head, read once). 404 when the scope has not reached it.",
    )


class ChannelScoreModel(_Wire):
    channel: Channel = Field(description="`fts` or `vector`.")
    rank: int = Field(ge=1, description="The hit's rank in this channel (1 = best admitted).")
    score: float = Field(
        description="The channel's raw score: `fts` BM25 (higher is better), `vector` cosine."
    )


class HitModel(_Wire):
    """One final search hit."""

    citation: CitationModel = Field(description="Resolves to exactly this entry version.")
    kind: str = Field(description="The entry's kind.")
    text: str = Field(description="The entry's text.")
    metadata: dict[str, Any] = Field(description="The entry's metadata.")
    score: float = Field(description="The coarse RRF fusion score (higher is better).")
    matched_by: list[Channel] = Field(description="The channels that found the entry.")
    thread: str | None = Field(default=None, description="The thread the entry belongs to.")
    occurred_at: datetime | None = Field(
        default=None, description="When the event happened: as written, else the write time."
    )
    explain: list[ChannelScoreModel] = Field(
        default_factory=list,
        description="Per channel that found the entry: its rank and raw score there, next to "
        "the fused `score`; use them to judge relevance and to set `min_similarity` or "
        "`min_score`.",
    )


def _is_none(value: object) -> bool:
    return value is None


class RerankUsageModel(_Wire):
    """Portable usage of one rerank; a field the provider does not report is null."""

    requests: int = Field(description="Provider requests made (0 for a cache hit).")
    input_tokens: int | None = Field(default=None, description="Chat input tokens (llm).")
    output_tokens: int | None = Field(default=None, description="Chat output tokens (llm).")
    documents: int | None = Field(default=None, description="Documents sent (endpoint).")


class RerankTraceModel(_Wire):
    """A redacted rerank trace: positions and counts, never candidate text, ids or scores."""

    policy_id: str = Field(description="The rerank policy that decided, with its version.")
    rerank_status: RerankStatus = Field(description="See the response's `rerank_status`.")
    candidate_count: int = Field(description="Size of the coarse pool shown to the reranker.")
    selected_ranks: list[int] = Field(
        description="1-based coarse ranks of the final hits, in final order."
    )
    discarded_rank_count: int = Field(
        description="Ranks the reranker returned that were dropped (duplicate, out of range, "
        "beyond the limit)."
    )
    used_fallback: bool = Field(description="True when no valid rank came back (RFC fallback).")
    latency_ms: float = Field(description="Time spent in the rerank stage.")
    usage: RerankUsageModel = Field(description="Requests, tokens or documents spent.")
    truncated_ranks: list[int] = Field(
        default_factory=list, description="Ranks whose text was cut to the per-candidate budget."
    )
    cache_hit: bool = Field(
        default=False, description="The decision was reused from the rerank cache."
    )
    candidate_policy_id: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="The candidate policy that sized the pool, with its version.",
    )
    query_class: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description=(
            "The query's class (one_fact, list, count, time, comparison) under "
            "powercontext.memory.candidates.by_class.v2; absent under the fixed policy."
        ),
    )
    candidate_limit: int | None = Field(
        default=None,
        exclude_if=_is_none,
        description="The candidate limit the policy chose for this query (by its class under "
        "by_class). The pool holds max(limit, candidate_limit) candidates (the RFC's coarse "
        "limit), so `candidate_count` exceeds it when the search asks for more hits.",
    )


class SearchResponse(_Wire):
    """The final hits, best first. Reranking, when enabled, changes their order, not this shape."""

    memory_ref: MemoryRefModel | None = Field(
        description="The exact revision every hit was read at; null for an empty scope."
    )
    mode: ResolvedMode = Field(description="The mode actually used: fts, vector or hybrid.")
    hits: list[HitModel] = Field(description="At most `limit` hits.")
    # Absent rather than null when not reported, in every transport that dumps this model: a
    # client that never asks sees exactly the response it saw before these fields existed.
    rerank_status: RerankStatus | None = Field(
        default=None,
        exclude_if=_is_none,
        description=(
            "Present when the search asked for `include_rerank: redacted`, and on every search "
            "of a fail-open deployment (absent otherwise, so existing clients see no change). "
            "`applied` (reranked), `fallback_no_valid_rank` (the reranker answered no usable "
            "rank: coarse order), `degraded_provider_error` (fail-open deployments only: the "
            "provider timed out or was unavailable, coarse order served), "
            "`degraded_invalid_output` (fail-open deployments only: the model's output stayed "
            "invalid, e.g. steered by a poisoned entry; coarse order served) or `disabled` (no "
            "rerank call: reranking off, or nothing to rerank)."
        ),
    )
    rerank: RerankTraceModel | None = Field(
        default=None,
        exclude_if=_is_none,
        description="Only with `include_rerank: redacted` and a rerank call; else absent.",
    )


class BatchSearchResponse(_Wire):
    """One page per search, in request order, every page at the same exact revision."""

    memory_ref: MemoryRefModel | None = Field(
        description="The revision every page was read at; null for an empty scope."
    )
    pages: list[SearchResponse] = Field(description="One page per search, in order.")
