"""HTTP v1 routes: thin translations between the wire models and the runtime's ScopedMemory.

Every memory route authenticates first (a FastAPI dependency resolved before the body is
validated) and then obtains its ScopedMemory only through `_memory`, which checks the body's
`scope_id` against the key's grant, so no route can forget the check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from starlette.responses import Response

from powercontext import __version__
from powercontext.memory.errors import NotFoundError
from powercontext.memory.models import (
    MemoryCitation,
    MemorySearchPage,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.scoped import ScopedMemory
from powercontext.runtime import Runtime
from powercontext.server.auth import ApiKeyAuthority, KeyGrant
from powercontext.server.metrics import CONTENT_TYPE, ServerMetrics
from powercontext.server.readiness import ReadinessProbe
from powercontext.server.schemas import (
    BatchSearchRequest,
    BatchSearchResponse,
    ChangesPageModel,
    ChangesRequest,
    ChannelScoreModel,
    CitationModel,
    EntriesPageModel,
    EntryModel,
    ErrorEnvelope,
    GetEntryRequest,
    HeadRequest,
    HeadResponse,
    HealthResponse,
    HitModel,
    ListEntriesRequest,
    MemoryRefModel,
    ReactivateEntryRequest,
    ReadyResponse,
    RememberBatchRequest,
    RememberOneRequest,
    RerankTraceModel,
    RetireEntryRequest,
    ReviseEntryRequest,
    SearchRequest,
    SearchResponse,
    WriteResultModel,
)


@dataclass
class ServerState:
    """What the routes need, set on `app.state.powercontext` by the lifespan."""

    authority: ApiKeyAuthority
    metrics: ServerMetrics
    runtime: Runtime | None = None
    readiness: ReadinessProbe | None = None


def state_of(request: Request) -> ServerState:
    state = request.app.state.powercontext
    assert isinstance(state, ServerState)
    return state


_ERRORS: dict[int, str] = {
    401: "unauthorized: auth is enabled and the bearer key is missing or unknown.",
    403: "forbidden: the key may not use this scope_id.",
    404: "not_found: the cited entry, version or revision does not exist in this scope.",
    409: "revision_conflict: expected_revision is not the head, or the citation names an "
    "older version of the entry; idempotency_conflict: the idempotency_key was used by a "
    "write with another body.",
    413: "payload_too_large: the body exceeds the byte limit, or a batch exceeds the entry limit.",
    422: "validation_error: the body violates a type or bound; capability_not_supported: the "
    "requested search mode is not available in this deployment.",
    500: "internal_error: an unexpected failure (details are in the server log).",
    502: "inference_invalid_output: the reranking model's output stayed invalid.",
    503: "storage_unavailable: the database failed (full, read-only, busy); "
    "inference_unavailable: the inference provider is unreachable. Idempotent calls may retry.",
    504: "inference_timeout: the reranking model did not answer in time.",
}
_COMMON = (401, 403, 413, 422, 500, 503)


def _responses(*extra: int) -> dict[int | str, dict[str, Any]]:
    return {
        status: {"model": ErrorEnvelope, "description": _ERRORS[status]}
        for status in sorted({*_COMMON, *extra})
    }


_bearer = HTTPBearer(
    auto_error=False,
    description="An API key; required when auth is enabled (always off by default on loopback).",
)


async def _caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> KeyGrant:
    token = credentials.credentials if credentials is not None else None
    return state_of(request).authority.authenticate(token)


Caller = Annotated[KeyGrant, Depends(_caller)]


def scoped_memory(request: Request, caller: KeyGrant, scope_id: str) -> ScopedMemory:
    """The caller's view of `scope_id`, refused (403) unless the key may use it."""
    caller.require(scope_id)
    runtime = state_of(request).runtime
    assert runtime is not None, "the lifespan opens the runtime before serving"
    return runtime.memory.for_scope(scope_id)


def _json(model: BaseModel, status_code: int = 200) -> Response:
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


def _citation(model: CitationModel) -> MemoryCitation:
    return MemoryCitation.model_validate(model.model_dump())


def search_request(body: SearchRequest) -> SearchMemoryRequest:
    """The runtime request of a v1 search body (the HTTP route and the MCP tool)."""
    fields = body.model_dump(exclude={"scope_id", "include_rerank"})
    return SearchMemoryRequest.model_validate(fields | {"filter": body.filter})


def search_response(
    page: MemorySearchPage,
    include_rerank: Literal["none", "redacted"] = "none",
    *,
    report_status: bool = False,
) -> SearchResponse:
    """The final hits; the rerank status when asked or reported; the trace only redacted and
    only when asked. `page.rerank` itself (with candidate text) never leaves the process."""
    ref = MemoryRefModel.model_validate(page.memory_ref.model_dump()) if page.memory_ref else None
    hits = [
        HitModel(
            citation=CitationModel(
                memory_ref=MemoryRefModel(
                    scope_id=hit.memory_ref.scope_id, revision=hit.memory_ref.revision
                ),
                entry_id=hit.entry_id,
                entry_version_id=hit.entry_version_id,
            ),
            kind=hit.kind,
            text=hit.text,
            metadata=hit.metadata,
            score=hit.score,
            matched_by=list(hit.matched_by),
            thread=hit.thread,
            occurred_at=hit.occurred_at,
            explain=[ChannelScoreModel.model_validate(e.model_dump()) for e in hit.explain],
        )
        for hit in page.hits
    ]
    trace = None
    if include_rerank == "redacted" and page.rerank is not None:
        trace = RerankTraceModel.model_validate(page.rerank.redacted().model_dump())
    status = page.rerank_status if report_status or include_rerank == "redacted" else None
    return SearchResponse(
        memory_ref=ref, mode=page.mode, hits=hits, rerank_status=status, rerank=trace
    )


def _operation_id(route: APIRoute) -> str:
    return route.name


router = APIRouter(generate_unique_id_function=_operation_id)
memory_router = APIRouter(
    prefix="/v1/memory", tags=["memory"], generate_unique_id_function=_operation_id
)


@memory_router.post(
    "/remember",
    response_model=WriteResultModel,
    responses=_responses(409),
    summary="Remember one entry, or a batch in one revision",
)
async def remember(
    body: RememberOneRequest | RememberBatchRequest, caller: Caller, request: Request
) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    if isinstance(body, RememberOneRequest):
        one = RememberMemoryRequest.model_validate(body.model_dump(exclude={"scope_id"}))
        return _json(await memory.remember(one))
    # The entries were validated with the runtime's own types; skip validating them twice.
    batch = [
        RememberMemoryRequest.model_construct(
            kind=e.kind,
            text=e.text,
            metadata=e.metadata,
            reason=e.reason,
            thread=e.thread,
            occurred_at=e.occurred_at,
            expected_revision=body.expected_revision,
            idempotency_key=body.idempotency_key,
        )
        for e in body.entries
    ]
    return _json(await memory.remember_many(batch))


@memory_router.post(
    "/search",
    response_model=SearchResponse,
    responses=_responses(404, 502, 504),
    summary="Search a scope: final hits, and a redacted rerank trace on request",
)
async def search(body: SearchRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    page = await memory.search(search_request(body))
    report_status = _observe_statuses(request, [page])
    response = search_response(page, body.include_rerank, report_status=report_status)
    return _json(response)


@memory_router.post(
    "/search/batch",
    response_model=BatchSearchResponse,
    responses=_responses(404, 502, 504),
    summary="Several searches at one exact revision: one page per search, in order",
)
async def search_batch(body: BatchSearchRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    pages = await run_batch_search(memory, body)
    report_status = _observe_statuses(request, pages)
    return _json(batch_search_response(pages, body.include_rerank, report_status=report_status))


async def run_batch_search(
    memory: ScopedMemory, body: BatchSearchRequest
) -> tuple[MemorySearchPage, ...]:
    return await memory.search_batch(
        [
            SearchMemoryRequest.model_validate(
                search.model_dump(exclude={"filter"})
                | {"filter": search.filter, "revision": body.revision}
            )
            for search in body.searches
        ]
    )


def batch_search_response(
    pages: Sequence[MemorySearchPage],
    include_rerank: Literal["none", "redacted"] = "none",
    *,
    report_status: bool = False,
) -> BatchSearchResponse:
    responses = [search_response(p, include_rerank, report_status=report_status) for p in pages]
    return BatchSearchResponse(memory_ref=responses[0].memory_ref, pages=responses)


def _observe_statuses(request: Request, pages: Sequence[MemorySearchPage]) -> bool:
    """Count each page's rerank status; True when the deployment always reports it.

    A fail-open deployment always reports the status: a degraded page must be told apart
    from a reranked one even by a client that never asks for the trace. Otherwise the keys
    are absent (SearchResponse omits them), so a client that does not ask sees no change.
    """
    state = state_of(request)
    for page in pages:
        assert page.rerank_status is not None, "the runtime always reports a status"
        state.metrics.observe_rerank_status(page.rerank_status)
    assert state.runtime is not None
    return state.runtime.settings.runtime.memory_rerank_failure_policy == "fail_open"


@memory_router.post(
    "/entries/list", response_model=EntriesPageModel, responses=_responses(404), summary="List"
)
async def list_entries(body: ListEntriesRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    page = await memory.list(
        revision=body.revision, cursor=body.cursor, limit=body.limit, where=body.filter
    )
    return _json(page)


@memory_router.post(
    "/entries/get", response_model=EntryModel, responses=_responses(404), summary="Get a citation"
)
async def get_entry(body: GetEntryRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    entry = await memory.get(_citation(body.citation))
    if entry is None:
        raise NotFoundError("the citation names no entry version in this scope")
    return _json(entry)


@memory_router.post(
    "/entries/revise",
    response_model=WriteResultModel,
    responses=_responses(404, 409),
    summary="Revise an entry",
)
async def revise_entry(body: ReviseEntryRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    fields = body.model_dump(exclude={"scope_id", "citation"})
    revised = ReviseMemoryRequest.model_validate(fields | {"citation": _citation(body.citation)})
    return _json(await memory.revise(revised))


@memory_router.post(
    "/entries/retire",
    response_model=WriteResultModel,
    responses=_responses(404, 409),
    summary="Retire an entry",
)
async def retire_entry(body: RetireEntryRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    retired = RetireMemoryRequest(
        citation=_citation(body.citation),
        reason=body.reason,
        expected_revision=body.expected_revision,
        idempotency_key=body.idempotency_key,
    )
    return _json(await memory.retire(retired))


@memory_router.post(
    "/entries/reactivate",
    response_model=WriteResultModel,
    responses=_responses(404, 409),
    summary="Reactivate a retired entry",
)
async def reactivate_entry(
    body: ReactivateEntryRequest, caller: Caller, request: Request
) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    reactivated = ReactivateMemoryRequest(
        citation=_citation(body.citation),
        reason=body.reason,
        expected_revision=body.expected_revision,
        idempotency_key=body.idempotency_key,
    )
    return _json(await memory.reactivate(reactivated))


@memory_router.post(
    "/changes", response_model=ChangesPageModel, responses=_responses(), summary="Change log"
)
async def changes(body: ChangesRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    return _json(await memory.changes(body.since_revision, limit=body.limit))


@memory_router.post(
    "/head", response_model=HeadResponse, responses=_responses(), summary="Head revision"
)
async def head(body: HeadRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    ref = await memory.head()
    model = MemoryRefModel.model_validate(ref.model_dump()) if ref else None
    return _json(HeadResponse(memory_ref=model))


@router.get("/v1/health", response_model=HealthResponse, tags=["operations"], summary="Liveness")
async def health() -> Response:
    return _json(HealthResponse(status="ok", version=__version__))


@router.get(
    "/v1/ready",
    response_model=ReadyResponse,
    tags=["operations"],
    summary="Readiness: database and configured models",
    responses={503: {"model": ReadyResponse, "description": "Some check failed."}},
)
async def ready(request: Request) -> Response:
    probe = state_of(request).readiness
    assert probe is not None, "the lifespan creates the probe before serving"
    report = await probe.check()
    return _json(report, 200 if report.status == "ready" else 503)


@router.get(
    "/metrics",
    tags=["operations"],
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    return Response(state_of(request).metrics.render(), media_type=CONTENT_TYPE)


router.include_router(memory_router)
