"""Requests and responses of the HTTP v1 API as pure data: no I/O here.

Each function returns a `Call`: the route, the JSON body, whether retrying it is safe, and how
to parse a success into the runtime's own models. The async and the sync clients share them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from powercontext.client.batches import remember_body
from powercontext.memory.erasure import (
    ForgetMemoryRequest,
    ForgetScopeRequest,
    MemoryForgetResult,
)
from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.history import MemoryEntryHistory
from powercontext.memory.models import (
    ChannelScore,
    MemoryChangesPage,
    MemoryCitation,
    MemoryEntriesPage,
    MemoryEntry,
    MemoryHit,
    MemoryRef,
    MemorySearchPage,
    MemoryWriteResult,
    ReactivateMemoryRequest,
    RedactedRerankTrace,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.scopes import ScopeSummary

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
IncludeRerank = Literal["none", "redacted"]
"""`redacted`: the search response carries the rerank trace without candidate text."""


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    method: Literal["GET", "POST"]
    path: str
    parse: Callable[[Any], T]
    body: dict[str, Any] | None = None
    idempotent: bool = False
    none_on_not_found: bool = False
    """`get` mirrors the runtime: a citation that names nothing is None, not an error."""
    accept_unavailable: bool = False
    """`ready` answers 503 with a report, which is a result, not an error."""
    entries: int = 1
    """How many entries the call writes: the transport scales its timeout with it."""
    lines: bytes | None = None
    """A JSON-lines body, sent instead of `body` (application/x-ndjson)."""
    query: dict[str, str] | None = None
    """Query parameters (a JSON-lines route takes its other arguments there)."""


class HealthStatus(BaseModel):
    model_config = ConfigDict(frozen=True)
    status: str
    version: str


class ReadinessCheck(BaseModel):
    model_config = ConfigDict(frozen=True)
    ok: bool
    detail: str


class ReadinessReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    status: Literal["ready", "not_ready"]
    checks: dict[str, ReadinessCheck]

    @property
    def ready(self) -> bool:
        return self.status == "ready"


W = TypeVar(
    "W",
    RememberMemoryRequest,
    ReviseMemoryRequest,
    RetireMemoryRequest,
    ReactivateMemoryRequest,
    ForgetMemoryRequest,
    ForgetScopeRequest,
)


def _check(method: str, value: object, cls: type[Any] | tuple[type[Any], ...]) -> None:
    """A wrong argument type as a TypeError naming what `method` takes: a dict or a str got as
    far as an AttributeError deep in the SDK ("'dict' object has no attribute ...")."""
    if not isinstance(value, cls):
        names = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
        raise TypeError(f"{method} takes a {names}, not {type(value).__name__}")


def _each(method: str, values: object, cls: type[Any]) -> list[Any]:
    """`values` as a list of `cls`; a str, a dict or one model is not a batch of them."""
    if isinstance(values, (str, bytes, dict, BaseModel)) or not isinstance(values, Iterable):
        raise TypeError(f"{method} takes a list of {cls.__name__}, not {type(values).__name__}")
    items = list(values)
    for item in items:
        _check(method, item, cls)
    return items


def _keyed(request: W) -> W:
    """The request with an idempotency key: the caller's, or a fresh one. A keyed write is
    safe to retry (the server answers a repeat with the original result), so the transport
    retries it like a read."""
    if request.idempotency_key is not None:
        return request
    return request.model_copy(update={"idempotency_key": uuid.uuid4().hex})


def _write(path: str, scope_id: str, request: BaseModel) -> Call[MemoryWriteResult]:
    return Call(
        "POST", path, MemoryWriteResult.model_validate, _body(scope_id, request), idempotent=True
    )


def _body(scope_id: str, request: BaseModel, **extra: Any) -> dict[str, Any]:
    return {"scope_id": scope_id, **request.model_dump(mode="json", exclude_none=True), **extra}


def _citation_json(citation: MemoryCitation) -> dict[str, Any]:
    return citation.model_dump(mode="json")


def _search_page(payload: Any) -> MemorySearchPage:
    # The wire nests each hit's citation; the runtime's MemoryHit holds its parts flat.
    hits = tuple(
        MemoryHit(
            memory_ref=MemoryRef.model_validate(hit["citation"]["memory_ref"]),
            entry_id=hit["citation"]["entry_id"],
            entry_version_id=hit["citation"]["entry_version_id"],
            kind=hit["kind"],
            text=hit["text"],
            metadata=hit["metadata"],
            score=hit["score"],
            matched_by=tuple(hit["matched_by"]),
            thread=hit.get("thread"),
            occurred_at=hit.get("occurred_at"),
            explain=tuple(ChannelScore.model_validate(e) for e in hit.get("explain", ())),
        )
        for hit in payload["hits"]
    )
    ref = payload.get("memory_ref")
    # The status is absent unless asked for (or the deployment is fail-open), and always absent
    # from older servers: None says "not reported", never a guess.
    trace = payload.get("rerank")
    return MemorySearchPage(
        memory_ref=MemoryRef.model_validate(ref) if ref else None,
        mode=payload["mode"],
        hits=hits,
        rerank=None,
        rerank_status=payload.get("rerank_status"),
        rerank_redacted=RedactedRerankTrace.model_validate(trace) if trace else None,
    )


def _head(payload: Any) -> MemoryRef | None:
    ref = payload.get("memory_ref")
    return MemoryRef.model_validate(ref) if ref else None


def remember(scope_id: str, request: RememberMemoryRequest) -> Call[MemoryWriteResult]:
    _check("remember", request, RememberMemoryRequest)
    return _write("/v1/memory/remember", scope_id, _keyed(request))


def remember_many(
    scope_id: str, requests: Sequence[RememberMemoryRequest]
) -> Call[MemoryWriteResult]:
    """One call and one revision for any size (client/batches.py says which route)."""
    batch = remember_body(scope_id, _each("remember_many", requests, RememberMemoryRequest))
    path = "/v1/memory/remember" if batch.json is not None else "/v1/memory/remember/stream"
    return Call(
        "POST",
        path,
        MemoryWriteResult.model_validate,
        batch.json,
        idempotent=True,
        entries=batch.entries,
        lines=batch.lines,
        query=batch.query,
    )


def search(
    scope_id: str, request: SearchMemoryRequest, include_rerank: IncludeRerank = "none"
) -> Call[MemorySearchPage]:
    _check("search", request, SearchMemoryRequest)
    extra = {"include_rerank": include_rerank} if include_rerank != "none" else {}
    return Call(
        "POST",
        "/v1/memory/search",
        _search_page,
        _body(scope_id, request, **extra),
        idempotent=True,
    )


def search_batch(
    scope_id: str,
    requests: Sequence[SearchMemoryRequest],
    include_rerank: IncludeRerank = "none",
) -> Call[tuple[MemorySearchPage, ...]]:
    requests = _each("search_batch", requests, SearchMemoryRequest)
    if not requests:
        raise MemoryValidationError("a batch search needs at least one request")
    # The route takes one revision per batch (the runtime's rule too); refuse rather than pick.
    revisions = {r.revision for r in requests}
    if len(revisions) > 1:
        raise MemoryValidationError("the searches of one batch must name one revision")
    (revision,) = revisions
    body: dict[str, Any] = {
        "scope_id": scope_id,
        "searches": [
            r.model_dump(mode="json", exclude={"revision"}, exclude_none=True) for r in requests
        ],
    }
    if revision is not None:
        body["revision"] = revision
    if include_rerank != "none":
        body["include_rerank"] = include_rerank
    return Call("POST", "/v1/memory/search/batch", _batch_pages, body, idempotent=True)


def _batch_pages(payload: Any) -> tuple[MemorySearchPage, ...]:
    return tuple(_search_page(page) for page in payload["pages"])


def list_entries(
    scope_id: str,
    *,
    revision: int | None = None,
    cursor: str | None = None,
    limit: int = 100,
    where: MemoryFilter | None = None,
) -> Call[MemoryEntriesPage]:
    """The SDK clients' `list` (client.memory): its parameters and defaults are theirs."""
    body: dict[str, Any] = {"scope_id": scope_id, "limit": limit}
    if where is not None:
        _check("list", where, MemoryFilter)
        body["filter"] = where.model_dump(mode="json", exclude_none=True)
    if revision is not None:
        body["revision"] = revision
    if cursor is not None:
        body["cursor"] = cursor
    return Call(
        "POST", "/v1/memory/entries/list", MemoryEntriesPage.model_validate, body, idempotent=True
    )


def get(scope_id: str, citation: MemoryCitation) -> Call[MemoryEntry | None]:
    _check("get", citation, MemoryCitation)
    return Call(
        "POST",
        "/v1/memory/entries/get",
        MemoryEntry.model_validate,
        {"scope_id": scope_id, "citation": _citation_json(citation)},
        idempotent=True,
        none_on_not_found=True,
    )


def revise(scope_id: str, request: ReviseMemoryRequest) -> Call[MemoryWriteResult]:
    _check("revise", request, ReviseMemoryRequest)
    return _write("/v1/memory/entries/revise", scope_id, _keyed(request))


def retire(scope_id: str, request: RetireMemoryRequest) -> Call[MemoryWriteResult]:
    _check("retire", request, RetireMemoryRequest)
    return _write("/v1/memory/entries/retire", scope_id, _keyed(request))


def reactivate(scope_id: str, request: ReactivateMemoryRequest) -> Call[MemoryWriteResult]:
    _check("reactivate", request, ReactivateMemoryRequest)
    return _write("/v1/memory/entries/reactivate", scope_id, _keyed(request))


def _read_by_entry(
    path: str, model: type[M], scope_id: str, entry_id: str, revision: int | None
) -> Call[M]:
    body: dict[str, Any] = {"scope_id": scope_id, "entry_id": entry_id}
    if revision is not None:
        body["revision"] = revision
    return Call("POST", path, model.model_validate, body, idempotent=True)


def get_entry(scope_id: str, entry_id: str, revision: int | None) -> Call[MemoryEntry]:
    return _read_by_entry("/v1/memory/entries/by-id", MemoryEntry, scope_id, entry_id, revision)


def history(scope_id: str, entry_id: str, revision: int | None) -> Call[MemoryEntryHistory]:
    return _read_by_entry(
        "/v1/memory/entries/history", MemoryEntryHistory, scope_id, entry_id, revision
    )


def _erasure(
    path: str, scope_id: str, request: BaseModel, entries: int = 1
) -> Call[MemoryForgetResult]:
    # Keyed like every write: a repeat of an erasure that went through answers its original
    # result instead of a 410 `erased`, so it is retried like a read.
    return Call(
        "POST",
        path,
        MemoryForgetResult.model_validate,
        _body(scope_id, request),
        idempotent=True,
        entries=entries,
    )


def forget(scope_id: str, request: ForgetMemoryRequest | str) -> Call[MemoryForgetResult]:
    """`request` is a request or one entry id."""
    _check("forget", request, (ForgetMemoryRequest, str))
    if isinstance(request, str):
        request = ForgetMemoryRequest(entry_ids=(request,))
    return _erasure("/v1/memory/forget", scope_id, _keyed(request), len(request.entry_ids))


def forget_scope(scope_id: str, request: ForgetScopeRequest) -> Call[MemoryForgetResult]:
    _check("forget_scope", request, ForgetScopeRequest)
    return _erasure("/v1/scopes/forget", scope_id, _keyed(request))


def _scopes(payload: Any) -> tuple[ScopeSummary, ...]:
    return tuple(ScopeSummary.model_validate(item) for item in payload["scopes"])


def scopes() -> Call[tuple[ScopeSummary, ...]]:
    return Call("GET", "/v1/scopes", _scopes, idempotent=True)


def changes(scope_id: str, since_revision: int, limit: int) -> Call[MemoryChangesPage]:
    return Call(
        "POST",
        "/v1/memory/changes",
        MemoryChangesPage.model_validate,
        {"scope_id": scope_id, "since_revision": since_revision, "limit": limit},
        idempotent=True,
    )


def head(scope_id: str) -> Call[MemoryRef | None]:
    return Call("POST", "/v1/memory/head", _head, {"scope_id": scope_id}, idempotent=True)


def health() -> Call[HealthStatus]:
    return Call("GET", "/v1/health", HealthStatus.model_validate, idempotent=True)


def ready() -> Call[ReadinessReport]:
    return Call(
        "GET",
        "/v1/ready",
        ReadinessReport.model_validate,
        idempotent=False,
        accept_unavailable=True,
    )
