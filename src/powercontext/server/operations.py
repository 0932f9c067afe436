"""The one table of operations: HTTP v1 routes, MCP tools and the inspector's JSON routes.

Each `Operation` row names its request and response wire models, its handler, its scope rule,
whether it writes, its HTTP route (method, path, the error statuses it may answer), its MCP
tools and its inspector route. `routes.py`, `mcp_tools.py` and `ui/routes.py` register from
`OPERATIONS` and nothing else, so an operation is added in one place (docs/http.md, "Adding
an operation").

A route whose body or answer is not one JSON document (an NDJSON export or import) sets
`HttpRoute.raw`: its endpoint gets the `Call` and the raw request and returns any response
(a streaming one included), while the row still documents its models and errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from powercontext.server import erasure, handlers, inspector_views
from powercontext.server.calls import Call, Handler, ScopeRule
from powercontext.server.schemas import RememberBatchRequest, RememberOneRequest
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
    hints = get_type_hints(handler)
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
    summary: str,
    http: HttpRoute,
    title: str,
    description: str,
    *,
    writes: bool,
    tool_name: str | None = None,
    destructive: bool = False,
    scope: ScopeRule = "body",
    inspector: InspectorRoute | None = None,
) -> Operation:
    """The common row: an HTTP route and one MCP tool, named as the operation unless told."""
    tool = McpTool(tool_name or handler.__name__, title, description, destructive=destructive)
    return _served(
        handler, summary, writes=writes, http=http, tools=(tool,), scope=scope, inspector=inspector
    )


OPERATIONS: tuple[Operation, ...] = (
    _served(
        handlers.remember,
        "Remember one entry, or a batch in one revision",
        writes=True,
        http=HttpRoute("POST", "/v1/memory/remember", (409,)),
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
    _one_tool(
        handlers.search,
        "Search a scope: final hits, and a redacted rerank trace on request",
        HttpRoute("POST", "/v1/memory/search", (404, 502, 504)),
        "Search memory",
        "Search a scope's memory at its head revision (or as of `revision`); returns the final "
        "hits, best first, each with a citation.",
        writes=False,
        inspector=InspectorRoute("POST", "/search", inspector_views.search),
    ),
    _one_tool(
        handlers.search_batch,
        "Several searches at one exact revision: one page per search, in order",
        HttpRoute("POST", "/v1/memory/search/batch", (404, 502, 504)),
        "Search memory in a batch",
        "Run several searches of one scope in one call (for example the sub-queries of one "
        "question); every page answers at the same revision, in request order.",
        writes=False,
    ),
    _one_tool(
        handlers.list_entries,
        "List",
        HttpRoute("POST", "/v1/memory/entries/list", (404,)),
        "List entries",
        "Page through the entries active at a revision (default the head), oldest first.",
        writes=False,
        inspector=InspectorRoute("POST", "/entries", inspector_views.entries),
    ),
    _one_tool(
        handlers.get_entry,
        "Get a citation",
        HttpRoute("POST", "/v1/memory/entries/get", (404, 410)),
        "Get entry",
        "Resolve a citation (from search, list or a write) to its exact entry version.",
        writes=False,
    ),
    _one_tool(
        handlers.revise_entry,
        "Revise an entry",
        HttpRoute("POST", "/v1/memory/entries/revise", (404, 409)),
        "Revise entry",
        "Write a new version of the entry a citation names (new text, optionally kind and "
        "metadata); the old version stays citable.",
        writes=True,
    ),
    _one_tool(
        handlers.retire_entry,
        "Retire an entry",
        HttpRoute("POST", "/v1/memory/entries/retire", (404, 409)),
        "Retire entry",
        "Retire (soft-delete) the entry a citation names: later revisions no longer find it; "
        "its citations still resolve.",
        writes=True,
        destructive=True,
    ),
    _one_tool(
        handlers.reactivate_entry,
        "Reactivate a retired entry",
        HttpRoute("POST", "/v1/memory/entries/reactivate", (404, 409)),
        "Reactivate entry",
        "Make a retired entry active again: search finds it from the new revision on.",
        writes=True,
    ),
    _one_tool(
        handlers.list_changes,
        "Change log",
        HttpRoute("POST", "/v1/memory/changes", operation_id="changes"),
        "List changes",
        "The scope's change log after a revision, oldest first: what each revision added, "
        "revised, retired or reactivated.",
        writes=False,
    ),
    _one_tool(
        handlers.head,
        "Head revision",
        HttpRoute("POST", "/v1/memory/head"),
        "Head revision",
        "The scope's head revision (null for an empty scope).",
        writes=False,
    ),
    _one_tool(
        handlers.get_entry_by_id,
        "Get an entry by id, at the head or at a revision",
        HttpRoute("POST", "/v1/memory/entries/by-id", (404, 410)),
        "Get entry by id",
        "The version of one entry (by entry_id) active at a revision (default the head); not "
        "found when the entry is retired then.",
        writes=False,
    ),
    _one_tool(
        handlers.entry_history,
        "Every version and change of one entry, newest first, as of a revision",
        HttpRoute("POST", "/v1/memory/entries/history", (404,), operation_id="entry_history_route"),
        "Entry history",
        "Every version of one entry (by entry_id) and every change that touched it, newest "
        "first, as of a revision (default the head), with the version active then.",
        writes=False,
        inspector=InspectorRoute("POST", "/history", inspector_views.history),
    ),
    _one_tool(
        erasure.forget_entries,
        "Erase entries for good (text, metadata, tokens, vectors); tombstones remain",
        HttpRoute("POST", "/v1/memory/forget", (404, 409, 410)),
        "Forget entries",
        "Erase entries (by entry_id) for good: the text, metadata, tokens and vectors of every "
        "version, at every revision. Cannot be undone. Their citations then answer `erased`; "
        "the change log keeps their ids and a forget change naming the caller's key.",
        writes=True,
        tool_name="forget_entry",
        destructive=True,
    ),
    _one_tool(
        erasure.forget_scope,
        "Erase every entry of a scope for good; revisions and tombstones remain",
        HttpRoute("POST", "/v1/scopes/forget", (404, 409)),
        "Forget scope",
        "Erase every entry of a scope for good (cannot be undone); its revisions and tombstones "
        "remain and it takes new writes.",
        writes=True,
        destructive=True,
    ),
    _one_tool(
        handlers.list_scopes,
        "List the scopes this key may use, with head revision and entry count",
        HttpRoute("GET", "/v1/scopes"),
        "List scopes",
        "The scopes this key may use that hold at least one revision, with each one's head "
        "revision and active entry count (the same list as GET /v1/scopes).",
        writes=False,
        scope="key",
        inspector=InspectorRoute("GET", "/scopes", inspector_views.scopes),
    ),
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
