"""The one table of operations: HTTP v1 routes, MCP tools and the inspector's JSON routes.

Each `Operation` row names its request and response wire models, its handler, its scope rule,
whether it writes, its HTTP route (method, path, the error statuses it may answer), its MCP
tools and its inspector route. `routes.py`, `mcp_tools.py` and `ui/routes.py` register from
`OPERATIONS` and nothing else, so an operation is added in one place (docs/http.md, "Adding
an operation"). The usual row, one route and one MCP tool, is one line: `_reads(handler,
"POST /v1/...", errors)` or `_writes(...)`; its handler's signature names the models and its
docstring is the route's summary and the tool's description.

A route whose body or answer is not one JSON document (an NDJSON export or import) sets
`HttpRoute.raw`: its endpoint gets the `Call` and the raw request and returns any response
(a streaming one included), while the row still documents its models and errors.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from powercontext.server import erasure, handlers, inspector_views
from powercontext.server.calls import Call, Handler, ScopeRule
from powercontext.server.remember_stream import RememberStreamQuery, remember_stream
from powercontext.server.schemas import (
    RememberBatchRequest,
    RememberEntryModel,
    RememberOneRequest,
    WriteResultModel,
)
from powercontext.server.transfer import (
    NDJSON,
    ExportLine,
    ExportQuery,
    ImportQuery,
    ImportResponse,
    export_page,
    export_scope,
    import_entries,
    import_scope,
)

RawEndpoint = Callable[[Call, Request], Awaitable[Response]]
"""A route that reads its own request and may stream its answer; it must reach a scope only
through `Call.memory`, which checks the key's grant."""
View = Callable[[Call, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class HttpRoute:
    method: Literal["GET", "POST"]
    path: str
    errors: tuple[int, ...] = ()
    """Statuses beyond the common ones (401, 403, 413, 422, 500, 503) documented for it."""
    operation_id: str | None = None
    """The OpenAPI operationId when it is not the operation's name (kept for compatibility)."""
    raw: RawEndpoint | None = None
    request_media_type: str = "application/json"
    """The request body type a raw POST route documents (e.g. `application/x-ndjson`: one
    `Operation.request` per line)."""
    response_media_type: str = "application/json"
    """The answer's type (e.g. `application/x-ndjson`: one `Operation.response` per line)."""
    query: type[BaseModel] | None = None
    """The query parameters a raw route reads (and validates) itself, documented from it."""


@dataclass(frozen=True, slots=True)
class McpTool:
    name: str
    title: str
    description: str
    destructive: bool = False
    request: type[BaseModel] | None = None
    """The tool's own input model when the operation's request is a union (else the same)."""


@dataclass(frozen=True, slots=True)
class InspectorRoute:
    method: Literal["GET", "POST"]
    path: str
    """Under /ui/api."""
    view: View


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    summary: str
    request: Any
    """A wire model, or a union of models the handler tells apart."""
    response: type[BaseModel]
    """The answer; for a raw route streaming NDJSON, the model of one line."""
    handler: Handler | None
    """None only for an operation served by a raw HTTP route alone (no MCP tool)."""
    writes: bool
    http: HttpRoute | None
    tools: tuple[McpTool, ...] = ()
    scope: ScopeRule = "body"
    inspector: InspectorRoute | None = None

    @property
    def operation_id(self) -> str:
        return (self.http.operation_id if self.http else None) or self.name

    def admit(self, call: Call, body: Any) -> None:
        """Refuse (403) a body naming a scope the key may not use, when the row names one."""
        if self.scope == "body":  # such a row's request model has a `scope_id`
            call.grant.require(body.scope_id)

    async def perform(self, call: Call, body: Any) -> BaseModel:
        """Run this operation for `call`: the scope rule first, then the handler."""
        self.admit(call, body)
        assert self.handler is not None, f"{self.name} is served by a raw route only"
        return await self.handler(call, body)


def _served(
    handler: Handler,
    summary: str,
    *,
    writes: bool,
    http: HttpRoute | None,
    tools: tuple[McpTool, ...] = (),
    scope: ScopeRule = "body",
    inspector: InspectorRoute | None = None,
) -> Operation:
    """A row whose name, request and response are its handler's: `async def name(call,
    body: Request) -> Response` declares them once."""
    hints = get_type_hints(handler, include_extras=True)  # keeps a union's Discriminator
    return Operation(
        handler.__name__,
        summary,
        hints["body"],
        hints["return"],
        handler,
        writes,
        http,
        tools,
        scope,
        inspector,
    )


def _one_tool(
    handler: Handler,
    route: str,
    errors: tuple[int, ...] = (),
    *,
    writes: bool,
    title: str | None = None,
    tool_name: str | None = None,
    destructive: bool = False,
    scope: ScopeRule = "body",
    inspector: View | None = None,
    operation_id: str | None = None,
) -> Operation:
    """The common row: `route` ("POST /v1/...") and one MCP tool, named as the operation
    unless told. The handler's docstring documents both: its first line is the route's
    summary, the rest the tool's description."""
    method, path = _method_and_path(route)
    name = handler.__name__
    summary, description = _docs(handler)
    tool = McpTool(
        tool_name or name,
        title or name.replace("_", " ").capitalize(),
        description,
        destructive=destructive,
    )
    view = InspectorRoute(method, f"/{inspector.__name__}", inspector) if inspector else None
    http = HttpRoute(method, path, errors, operation_id=operation_id)
    return _served(
        handler, summary, writes=writes, http=http, tools=(tool,), scope=scope, inspector=view
    )


_reads = functools.partial(_one_tool, writes=False)
_writes = functools.partial(_one_tool, writes=True)


def _method_and_path(route: str) -> tuple[Literal["GET", "POST"], str]:
    method, _, path = route.partition(" ")
    if method == "GET":
        return "GET", path
    if method == "POST":
        return "POST", path
    raise ValueError(f"route {route!r} is not 'GET /path' or 'POST /path'")


def _docs(handler: Handler) -> tuple[str, str]:
    """The summary (first line) and description (the rest, as one line: its wrapping is the
    source's, not the text's) of the handler's docstring."""
    summary, _, description = (inspect.getdoc(handler) or "").partition("\n\n")
    if not summary or not description:
        raise TypeError(f"handler {handler.__name__}: its docstring needs a summary and a body")
    return summary, " ".join(description.split())


_SEARCH_ERRORS = (404, 502, 504)
"""A search may also fail in its rerank stage: the model's answer (502) or its deadline (504)."""

OPERATIONS: tuple[Operation, ...] = (
    _served(
        handlers.remember,
        "Remember one entry, or a batch in one revision",
        writes=True,
        http=HttpRoute("POST", "/v1/memory/remember", (409, 410)),
        tools=(
            McpTool(
                "remember",
                "Remember",
                "Remember one entry (text; optional kind, metadata, thread and occurred_at) "
                "in a scope; creates one revision and returns the citations of the version "
                "written.",
                request=RememberOneRequest,
            ),
            McpTool(
                "remember_batch",
                "Remember a batch",
                "Remember several entries in one revision (all or none); returns their citations. "
                "Over HTTP the request is at most POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES "
                "(1 MiB by default): split larger batches.",
                request=RememberBatchRequest,
            ),
        ),
    ),
    Operation(
        "remember_stream",
        "Remember a batch of any size, one entry per line, in one revision",
        RememberEntryModel,
        WriteResultModel,
        None,
        writes=True,
        http=HttpRoute(
            "POST",
            "/v1/memory/remember/stream",
            (409, 410),
            raw=remember_stream,
            request_media_type=NDJSON,
            query=RememberStreamQuery,
        ),
    ),
    _reads(
        handlers.search,
        "POST /v1/memory/search",
        _SEARCH_ERRORS,
        title="Search memory",
        inspector=inspector_views.search,
    ),
    _reads(
        handlers.search_batch,
        "POST /v1/memory/search/batch",
        _SEARCH_ERRORS,
        title="Search memory in a batch",
    ),
    _reads(
        handlers.list_entries,
        "POST /v1/memory/entries/list",
        (404,),
        inspector=inspector_views.entries,
    ),
    _reads(handlers.get_entry, "POST /v1/memory/entries/get", (404, 410)),
    _writes(handlers.revise_entry, "POST /v1/memory/entries/revise", (404, 409, 410)),
    _writes(
        handlers.retire_entry, "POST /v1/memory/entries/retire", (404, 409, 410), destructive=True
    ),
    _writes(handlers.reactivate_entry, "POST /v1/memory/entries/reactivate", (404, 409, 410)),
    _reads(handlers.list_changes, "POST /v1/memory/changes", operation_id="changes"),
    _reads(handlers.head, "POST /v1/memory/head", title="Head revision"),
    _reads(handlers.get_entry_by_id, "POST /v1/memory/entries/by-id", (404, 410)),
    _reads(
        handlers.entry_history,
        "POST /v1/memory/entries/history",
        (404,),
        operation_id="entry_history_route",
        inspector=inspector_views.history,
    ),
    _writes(
        erasure.forget_entries,
        "POST /v1/memory/forget",
        (404, 409, 410),
        tool_name="forget_entry",
        destructive=True,
    ),
    _writes(erasure.forget_scope, "POST /v1/scopes/forget", (404, 409, 410), destructive=True),
    _reads(handlers.list_scopes, "GET /v1/scopes", scope="key", inspector=inspector_views.scopes),
    Operation(
        "export_scope",
        "Export the entries of a scope as JSON lines, streamed",
        ExportQuery,
        ExportLine,  # type: ignore[arg-type]  # one line: the header, then entries
        None,
        writes=False,
        http=HttpRoute(
            "GET",
            "/v1/memory/export",
            (404,),
            raw=export_scope,
            response_media_type=NDJSON,
            query=ExportQuery,
        ),
    ),
    Operation(
        "import_scope",
        "Import an export into a scope, keeping entry ids, one revision per batch",
        ExportLine,
        ImportResponse,
        None,
        writes=True,
        http=HttpRoute(
            "POST",
            "/v1/memory/import",
            (409,),
            raw=import_scope,
            request_media_type=NDJSON,
            query=ImportQuery,
        ),
    ),
    # MCP cannot stream: its export and import go a page at a time (HTTP streams instead).
    _served(
        export_page,
        "Export a page of a scope's entries",
        writes=False,
        http=None,
        tools=(
            McpTool(
                "export_page",
                "Export a page",
                "A page of a scope's export: its header and up to `limit` entries from "
                "`offset`, in write order, with `next_offset` for the next page (pass the "
                "header's revision to read every page at one revision).",
            ),
        ),
    ),
    _served(
        import_entries,
        "Import a page of an export into a scope",
        writes=True,
        http=None,
        tools=(
            McpTool(
                "import_entries",
                "Import a page",
                "Write an export's entries (its header and up to 1000 entries, one page of "
                "export_page) into a scope, keeping their ids; on_existing: fail, skip or "
                "replace.",
            ),
        ),
    ),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
