"""MCP tools over streamable HTTP at `/mcp`: remember, search, list, get and retire.

The tools are the HTTP v1 memory operations with the same wire models (server/schemas.py):
each tool's input schema is its v1 request model's JSON schema and its output schema is the
v1 response model's, so the two surfaces cannot drift apart.

Auth is the HTTP v1 rule. The endpoint answers 401 before any MCP processing when the bearer
key is missing or unknown, and every tool call authenticates its own HTTP request again and
checks the scope it names against the key's grant; a refused scope is a tool error that
carries no data. The transport runs stateless with JSON responses: no session is kept
between HTTP requests, so nothing a key did can be reached through another key's request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, cast

from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)
from pydantic import BaseModel, ValidationError
from starlette.types import Receive, Scope, Send

from powercontext import __version__
from powercontext.config import ServerSettings
from powercontext.memory.errors import NotFoundError, PowerContextError
from powercontext.memory.models import (
    MemoryCitation,
    RememberMemoryRequest,
    RetireMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.scoped import ScopedMemory
from powercontext.server.auth import ApiKeyAuthority, KeyGrant, is_loopback
from powercontext.server.errors import UnauthorizedError, describe, error_response
from powercontext.server.routes import ServerState, search_response
from powercontext.server.schemas import (
    CitationModel,
    EntriesPageModel,
    EntryModel,
    GetEntryRequest,
    ListEntriesRequest,
    RememberOneRequest,
    RetireEntryRequest,
    SearchRequest,
    SearchResponse,
    WriteResultModel,
)

log = logging.getLogger("powercontext.mcp")

MCP_PATH = "/mcp"
SERVER_NAME = "powercontext"
_INSTRUCTIONS = (
    "PowerContext is durable, revisioned memory. Every tool names a `scope_id` (a tenant, "
    "project or agent); the API key must be allowed that scope. Search returns hits with "
    "citations; pass a citation to get_entry to read that exact version, or to retire_entry "
    "to retire the entry."
)

Handler = Callable[[ScopedMemory, Any], Awaitable[BaseModel]]


class _ScopedBody(Protocol):
    scope_id: str


@dataclass(frozen=True, slots=True)
class MemoryTool:
    """One MCP tool: the v1 request model it accepts and the v1 response model it returns."""

    name: str
    description: str
    request: type[BaseModel]
    response: type[BaseModel]
    handler: Handler
    annotations: ToolAnnotations

    def describe(self) -> Tool:
        return Tool(
            name=self.name,
            title=self.annotations.title,
            description=self.description,
            input_schema=self.request.model_json_schema(mode="validation"),
            output_schema=self.response.model_json_schema(mode="serialization"),
            annotations=self.annotations,
        )


def _citation(model: CitationModel) -> MemoryCitation:
    return MemoryCitation.model_validate(model.model_dump())


async def _remember(memory: ScopedMemory, body: RememberOneRequest) -> BaseModel:
    one = RememberMemoryRequest.model_validate(body.model_dump(exclude={"scope_id"}))
    result = await memory.remember(one)
    return WriteResultModel.model_validate(result.model_dump())


async def _search(memory: ScopedMemory, body: SearchRequest) -> BaseModel:
    page = await memory.search(
        SearchMemoryRequest(query=body.query, limit=body.limit, mode=body.mode)
    )
    return search_response(page)


async def _list(memory: ScopedMemory, body: ListEntriesRequest) -> BaseModel:
    page = await memory.list(revision=body.revision, cursor=body.cursor, limit=body.limit)
    return EntriesPageModel.model_validate(page.model_dump())


async def _get(memory: ScopedMemory, body: GetEntryRequest) -> BaseModel:
    entry = await memory.get(_citation(body.citation))
    if entry is None:
        raise NotFoundError("the citation names no entry version in this scope")
    return EntryModel.model_validate(entry.model_dump())


async def _retire(memory: ScopedMemory, body: RetireEntryRequest) -> BaseModel:
    retired = RetireMemoryRequest(
        citation=_citation(body.citation),
        reason=body.reason,
        expected_revision=body.expected_revision,
    )
    result = await memory.retire(retired)
    return WriteResultModel.model_validate(result.model_dump())


def _annotations(title: str, *, read_only: bool, destructive: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=read_only,
        open_world_hint=False,
    )


MEMORY_TOOLS: tuple[MemoryTool, ...] = (
    MemoryTool(
        "remember",
        "Remember one entry (text; optional kind, metadata, thread and occurred_at) in a scope; "
        "creates one revision and returns the citations of the version written.",
        RememberOneRequest,
        WriteResultModel,
        _remember,
        _annotations("Remember", read_only=False),
    ),
    MemoryTool(
        "search",
        "Search a scope's memory at its head revision; returns the final hits, best first, "
        "each with a citation.",
        SearchRequest,
        SearchResponse,
        _search,
        _annotations("Search memory", read_only=True),
    ),
    MemoryTool(
        "list_entries",
        "Page through the entries active at a revision (default the head), oldest first.",
        ListEntriesRequest,
        EntriesPageModel,
        _list,
        _annotations("List entries", read_only=True),
    ),
    MemoryTool(
        "get_entry",
        "Resolve a citation (from search, list or a write) to its exact entry version.",
        GetEntryRequest,
        EntryModel,
        _get,
        _annotations("Get entry", read_only=True),
    ),
    MemoryTool(
        "retire_entry",
        "Retire (soft-delete) the entry a citation names: later revisions no longer find it; "
        "its citations still resolve.",
        RetireEntryRequest,
        WriteResultModel,
        _retire,
        _annotations("Retire entry", read_only=False, destructive=True),
    ),
)


def bearer_token(headers: Mapping[str, str] | None) -> str | None:
    """The credentials of an `Authorization: Bearer <key>` header, else None."""
    value = (headers or {}).get("authorization")
    if not value:
        return None
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def _tool_error(code: str, message: str, details: dict[str, Any] | None = None) -> CallToolResult:
    # Text only: structured content would have to match the tool's (success) output schema.
    text = f"{code}: {message}"
    if details:
        text += " " + json.dumps(details, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _validation_error(exc: ValidationError) -> CallToolResult:
    # Where and why only: pydantic's `input` would echo the caller's text back.
    errors = [
        {"loc": [str(part) for part in e.get("loc", ())], "msg": str(e.get("msg", ""))}
        for e in exc.errors()[:20]
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid arguments"}
    where = ".".join(first["loc"]) or "arguments"
    return _tool_error("validation_error", f"{where}: {first['msg']}", {"errors": errors})


class McpTools:
    """The MCP server of one app: tool listing, tool calls and the `/mcp` ASGI endpoint."""

    def __init__(self, state: ServerState, settings: ServerSettings) -> None:
        self._state = state
        self._settings = settings
        self._tools = {tool.name: tool for tool in MEMORY_TOOLS}
        self._listing = ListToolsResult(tools=[tool.describe() for tool in MEMORY_TOOLS])
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=__version__,
            title="PowerContext",
            instructions=_INSTRUCTIONS,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self._manager: StreamableHTTPSessionManager | None = None

    @property
    def authority(self) -> ApiKeyAuthority:
        return self._state.authority

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self._tools.get(name)
        return None if tool is None else tool.request.model_json_schema(mode="validation")

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return self._listing

    def _grant(self, ctx: ServerRequestContext[Any]) -> KeyGrant:
        # The endpoint authenticated this HTTP request already; authenticating again here
        # keeps the tool fail-closed even if it were ever reached another way.
        headers = getattr(ctx.request, "headers", None)
        return self.authority.authenticate(bearer_token(headers))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        tool = self._tools.get(params.name)
        if tool is None:
            return _tool_error("not_found", f"unknown tool {params.name!r}")
        try:
            grant = self._grant(ctx)
            body = tool.request.model_validate(params.arguments or {})
            scope_id = cast(_ScopedBody, body).scope_id  # every v1 memory request has one
            grant.require(scope_id)
            runtime = self._state.runtime
            assert runtime is not None, "the lifespan opens the runtime before serving"
            result = await tool.handler(runtime.memory.for_scope(scope_id), body)
        except ValidationError as exc:
            return _validation_error(exc)
        except PowerContextError as exc:
            status, code, message, details = describe(exc)
            if status >= 500:
                log.warning("mcp tool %s failed: %s (%s)", tool.name, code, type(exc).__name__)
            return _tool_error(code, message, details)
        except Exception:
            log.exception("mcp tool %s raised an unexpected error", tool.name)
            return _tool_error("internal_error", "internal server error")
        structured = result.model_dump(mode="json")
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
            structured_content=structured,
        )

    def _security(self) -> TransportSecuritySettings:
        if is_loopback(self._settings.http.host):
            # Loopback servers are reachable by any web page the user opens: refuse other
            # Host/Origin values so a DNS-rebinding page cannot drive the tools.
            return TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve `/mcp` for the duration of the app's lifespan (a manager runs only once)."""
        manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=True,
            security_settings=self._security(),
            max_request_body_size=self._settings.http.max_body_bytes,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The `/mcp` ASGI endpoint: HTTP-level auth, then the SDK's streamable HTTP transport."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            self.authority.authenticate(bearer_token(headers))
        except UnauthorizedError as exc:
            response = error_response(
                401, "unauthorized", str(exc), headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        manager = self._manager
        if manager is None:
            response = error_response(503, "internal_error", "the MCP endpoint is not running")
            await response(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)
