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
from typing import Any, Literal

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from powercontext.server import erasure, handlers, inspector_views
from powercontext.server.calls import Call, Handler, ScopeRule
from powercontext.server.history import EntryByIdRequest, EntryHistoryModel, HistoryRequest
from powercontext.server.schemas import (
    BatchSearchRequest,
    BatchSearchResponse,
    ChangesPageModel,
    ChangesRequest,
    EntriesPageModel,
    EntryModel,
    GetEntryRequest,
    HeadRequest,
    HeadResponse,
    ListEntriesRequest,
    ReactivateEntryRequest,
    RememberBatchRequest,
    RememberOneRequest,
    RetireEntryRequest,
    ReviseEntryRequest,
    SearchRequest,
    SearchResponse,
    WriteResultModel,
)
from powercontext.server.scopes import ListScopesRequest, ScopesResponse
from powercontext.server.transfer import (
    NDJSON,
    ExportLine,
    ExportPageRequest,
    ExportPageResponse,
    ExportQuery,
    ImportEntriesRequest,
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


def _one_tool(
    name: str,
    summary: str,
    request: Any,
    response: type[BaseModel],
    handler: Handler,
    *,
    writes: bool,
    http: HttpRoute,
    title: str,
    description: str,
    tool_name: str | None = None,
    destructive: bool = False,
    scope: ScopeRule = "body",
    inspector: InspectorRoute | None = None,
) -> Operation:
    """The common row: an HTTP route and one MCP tool, named as the operation unless told."""
    tool = McpTool(tool_name or name, title, description, destructive=destructive)
    return Operation(
        name, summary, request, response, handler, writes, http, (tool,), scope, inspector
    )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "remember",
        "Remember one entry, or a batch in one revision",
        handlers.RememberRequest,
        WriteResultModel,
        handlers.remember,
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
        "search",
        "Search a scope: final hits, and a redacted rerank trace on request",
        SearchRequest,
        SearchResponse,
        handlers.search,
        writes=False,
        http=HttpRoute("POST", "/v1/memory/search", (404, 502, 504)),
        title="Search memory",
        description="Search a scope's memory at its head revision (or as of `revision`); returns "
        "the final hits, best first, each with a citation.",
        inspector=InspectorRoute("POST", "/search", inspector_views.search),
    ),
    _one_tool(
        "search_batch",
        "Several searches at one exact revision: one page per search, in order",
        BatchSearchRequest,
        BatchSearchResponse,
        handlers.search_batch,
        writes=False,
        http=HttpRoute("POST", "/v1/memory/search/batch", (404, 502, 504)),
        title="Search memory in a batch",
        description="Run several searches of one scope in one call (for example the sub-queries "
        "of one question); every page answers at the same revision, in request order.",
    ),
    _one_tool(
        "list_entries",
        "List",
        ListEntriesRequest,
        EntriesPageModel,
        handlers.list_entries,
        writes=False,
        http=HttpRoute("POST", "/v1/memory/entries/list", (404,)),
        title="List entries",
        description="Page through the entries active at a revision (default the head), "
        "oldest first.",
        inspector=InspectorRoute("POST", "/entries", inspector_views.entries),
    ),
    _one_tool(
        "get_entry",
        "Get a citation",
        GetEntryRequest,
        EntryModel,
        handlers.get_entry,
        writes=False,
        http=HttpRoute("POST", "/v1/memory/entries/get", (404, 410)),
        title="Get entry",
        description="Resolve a citation (from search, list or a write) to its exact entry version.",
    ),
    _one_tool(
        "revise_entry",
        "Revise an entry",
        ReviseEntryRequest,
        WriteResultModel,
        handlers.revise_entry,
        writes=True,
        http=HttpRoute("POST", "/v1/memory/entries/revise", (404, 409)),
        title="Revise entry",
        description="Write a new version of the entry a citation names (new text, optionally kind "
        "and metadata); the old version stays citable.",
    ),
    _one_tool(
        "retire_entry",
        "Retire an entry",
        RetireEntryRequest,
        WriteResultModel,
        handlers.retire_entry,
        writes=True,
        http=HttpRoute("POST", "/v1/memory/entries/retire", (404, 409)),
        title="Retire entry",
        description="Retire (soft-delete) the entry a citation names: later revisions no longer "
        "find it; its citations still resolve.",
        destructive=True,
    ),
    _one_tool(
        "reactivate_entry",
        "Reactivate a retired entry",
        ReactivateEntryRequest,
        WriteResultModel,
        handlers.reactivate_entry,
        writes=True,
        http=HttpRoute("POST", "/v1/memory/entries/reactivate", (404, 409)),
        title="Reactivate entry",
        description="Make a retired entry active again: search finds it from the new revision on.",
    ),
    _one_tool(
        "list_changes",
        "Change log",
        ChangesRequest,
        ChangesPageModel,
        handlers.changes,
        writes=False,
        http=HttpRoute("POST", "/v1/memory/changes", operation_id="changes"),
        title="List changes",
        description="The scope's change log after a revision, oldest first: what each revision "
        "added, revised, retired or reactivated.",
    ),
    _one_tool(
        "head",
        "Head revision",
        HeadRequest,
        HeadResponse,
        handlers.head,
        writes=False,
        http=HttpRoute("POST", "/v1/memory/head"),
        title="Head revision",
        description="The scope's head revision (null for an empty scope).",
    ),
    _one_tool(
        "get_entry_by_id",
        "Get an entry by id, at the head or at a revision",
        EntryByIdRequest,
        EntryModel,
        handlers.get_entry_by_id,
        writes=False,
        http=HttpRoute("POST", "/v1/memory/entries/by-id", (404, 410)),
        title="Get entry by id",
        description="The version of one entry (by entry_id) active at a revision (default the "
        "head); not found when the entry is retired then.",
    ),
    _one_tool(
        "entry_history",
        "Every version and change of one entry, newest first, as of a revision",
        HistoryRequest,
        EntryHistoryModel,
        handlers.history,
        writes=False,
        http=HttpRoute(
            "POST", "/v1/memory/entries/history", (404,), operation_id="entry_history_route"
        ),
        title="Entry history",
        description="Every version of one entry (by entry_id) and every change that touched it, "
        "newest first, as of a revision (default the head), with the version active "
        "then.",
        inspector=InspectorRoute("POST", "/history", inspector_views.history),
    ),
    _one_tool(
        "forget_entries",
        "Erase entries for good (text, metadata, tokens, vectors); tombstones remain",
        erasure.ForgetEntriesRequest,
        erasure.ForgetResultModel,
        erasure.forget_entries,
        writes=True,
        http=HttpRoute("POST", "/v1/memory/forget", (404, 409, 410)),
        tool_name="forget_entry",
        title="Forget entries",
        description="Erase entries (by entry_id) for good: the text, metadata, tokens and vectors "
        "of every version, at every revision. Cannot be undone. Their citations then "
        "answer `erased`; the change log keeps their ids and a forget change naming "
        "the caller's key.",
        destructive=True,
    ),
    _one_tool(
        "forget_scope",
        "Erase every entry of a scope for good; revisions and tombstones remain",
        erasure.ForgetScopeBody,
        erasure.ForgetResultModel,
        erasure.forget_scope,
        writes=True,
        http=HttpRoute("POST", "/v1/scopes/forget", (404, 409)),
        title="Forget scope",
        description="Erase every entry of a scope for good (cannot be undone); its revisions and "
        "tombstones remain and it takes new writes.",
        destructive=True,
    ),
    _one_tool(
        "list_scopes",
        "List the scopes this key may use, with head revision and entry count",
        ListScopesRequest,
        ScopesResponse,
        handlers.list_scopes,
        writes=False,
        http=HttpRoute("GET", "/v1/scopes"),
        title="List scopes",
        description="The scopes this key may use that hold at least one revision, with each one's "
        "head revision and active entry count (the same list as GET /v1/scopes).",
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
    Operation(
        "export_page",
        "Export a page of a scope's entries",
        ExportPageRequest,
        ExportPageResponse,
        export_page,
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
    Operation(
        "import_entries",
        "Import a page of an export into a scope",
        ImportEntriesRequest,
        ImportResponse,
        import_entries,
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
