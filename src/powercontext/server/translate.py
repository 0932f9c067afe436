"""Translation between the wire models (server/schemas.py) and the Memory core's models.

The one place where a wire request becomes a runtime request and a runtime result becomes a
wire response, for every surface: HTTP v1, MCP tools and the inspector all build their
search request with `search_request`, so a field added to `SearchRequest` reaches all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from powercontext.memory.models import (
    MemoryCitation,
    MemoryHit,
    MemoryRef,
    MemorySearchPage,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.server.schemas import (
    CitationModel,
    HeadResponse,
    MemoryRefModel,
    ReactivateEntryRequest,
    RememberBatchRequest,
    RememberOneRequest,
    RetireEntryRequest,
    ReviseEntryRequest,
)
from powercontext.server.search_schemas import (
    BatchSearchRequest,
    BatchSearchResponse,
    RerankTraceModel,
    SearchRequest,
    SearchResponse,
)

Wire = TypeVar("Wire", bound=BaseModel)
IncludeRerank = Literal["none", "redacted"]


def to_wire(model: type[Wire], value: BaseModel) -> Wire:
    """A runtime result as the wire model that mirrors it field for field."""
    return model.model_validate(value.model_dump())


def citation(model: CitationModel) -> MemoryCitation:
    return MemoryCitation.model_validate(model.model_dump())


def memory_ref(ref: MemoryRef | None) -> MemoryRefModel | None:
    return MemoryRefModel.model_validate(ref.model_dump()) if ref is not None else None


def _hit_fields(hit: MemoryHit, refs: dict[MemoryRef, MemoryRefModel]) -> dict[str, Any]:
    """A hit in the wire shape; nested runtime models are read by attribute when validated.

    `refs`: the wire form of each revision already met. A page's hits share one, and a
    model instance is taken as it is, where each hit's copy would be validated again."""
    ref = refs.get(hit.memory_ref)
    if ref is None:
        ref = refs[hit.memory_ref] = MemoryRefModel.model_validate(
            hit.memory_ref, from_attributes=True
        )
    citation = {
        "memory_ref": ref,
        "entry_id": hit.entry_id,
        "entry_version_id": hit.entry_version_id,
    }
    return {
        "citation": citation,
        "kind": hit.kind,
        "text": hit.text,
        "metadata": hit.metadata,
        "score": hit.score,
        "matched_by": hit.matched_by,
        "thread": hit.thread,
        "occurred_at": hit.occurred_at,
        "explain": hit.explain,
    }


def remember_one(body: RememberOneRequest) -> RememberMemoryRequest:
    return RememberMemoryRequest.model_validate(body.model_dump(exclude={"scope_id"}))


def remember_batch(body: RememberBatchRequest) -> list[RememberMemoryRequest]:
    # The entries were validated with the runtime's own types; skip validating them twice.
    shared: dict[str, Any] = {
        "expected_revision": body.expected_revision,
        "idempotency_key": body.idempotency_key,
    }
    return [
        RememberMemoryRequest.model_construct(**dict(entry), **shared) for entry in body.entries
    ]


def revise_request(body: ReviseEntryRequest) -> ReviseMemoryRequest:
    fields = body.model_dump(exclude={"scope_id", "citation"})
    return ReviseMemoryRequest.model_validate(fields | {"citation": citation(body.citation)})


def _state_change(body: RetireEntryRequest) -> dict[str, Any]:
    """What retire and reactivate both take (ReactivateEntryRequest extends the retire body)."""
    return {
        "citation": citation(body.citation),
        "reason": body.reason,
        "expected_revision": body.expected_revision,
        "idempotency_key": body.idempotency_key,
    }


def retire_request(body: RetireEntryRequest) -> RetireMemoryRequest:
    return RetireMemoryRequest(**_state_change(body))


def reactivate_request(body: ReactivateEntryRequest) -> ReactivateMemoryRequest:
    return ReactivateMemoryRequest(**_state_change(body))


def search_request(body: SearchRequest) -> SearchMemoryRequest:
    """The runtime request of a v1 search body (HTTP, MCP and the inspector)."""
    fields = body.model_dump(exclude={"scope_id", "include_rerank"})
    return SearchMemoryRequest.model_validate(fields | {"filter": body.filter})


def batch_search_requests(body: BatchSearchRequest) -> list[SearchMemoryRequest]:
    """Each search with its own filter and floors, all at the batch's one revision."""
    return [
        SearchMemoryRequest.model_validate(
            search.model_dump(exclude={"filter"})
            | {"filter": search.filter, "revision": body.revision}
        )
        for search in body.searches
    ]


def search_response(
    page: MemorySearchPage,
    include_rerank: IncludeRerank = "none",
    *,
    report_status: bool = False,
) -> SearchResponse:
    """The final hits; the rerank status when asked or reported; the trace only redacted and
    only when asked. `page.rerank` itself (with candidate text) never leaves the process."""
    trace = None
    if include_rerank == "redacted" and page.rerank is not None:
        trace = RerankTraceModel.model_validate(page.rerank.redacted().model_dump())
    status = page.rerank_status if report_status or include_rerank == "redacted" else None
    # One validation of the whole answer (attributes of the runtime models read in place)
    # costs about half of building and validating each hit's models one by one.
    refs: dict[MemoryRef, MemoryRefModel] = {}
    fields = {
        "memory_ref": page.memory_ref,
        "mode": page.mode,
        "hits": [_hit_fields(hit, refs) for hit in page.hits],
        "rerank_status": status,
        "rerank": trace,
    }
    return SearchResponse.model_validate(fields, from_attributes=True)


def batch_search_response(
    pages: Sequence[MemorySearchPage],
    include_rerank: IncludeRerank = "none",
    *,
    report_status: bool = False,
) -> BatchSearchResponse:
    responses = [search_response(p, include_rerank, report_status=report_status) for p in pages]
    return BatchSearchResponse(memory_ref=responses[0].memory_ref, pages=responses)


def head_response(ref: MemoryRef | None) -> HeadResponse:
    return HeadResponse(memory_ref=memory_ref(ref))
