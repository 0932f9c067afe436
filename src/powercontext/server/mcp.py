"""The MCP server: tool listing, tool calls, `/mcp` over streamable HTTP, and stdio.

The tools themselves (built from server/operations.py, same wire models) are in mcp_tools.

Auth is the HTTP v1 rule. Over HTTP the endpoint answers 401 before any MCP processing when
the bearer key is missing or unknown, and every tool call authenticates its own HTTP request
again and checks the scope it names against the key's grant; a refused scope is a tool error
that carries no data. The transport runs stateless with JSON responses: no session is kept
between HTTP requests, so nothing a key did can be reached through another key's request.
Over stdio (one client, the process that started us) there is no header: the key is given
once at startup (`powercontext mcp --api-key`), checked then, and every call is held to its
grant exactly as over HTTP. With no keys configured both transports are open, like the API.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pydantic_core
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolRequestParams,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.routing import Match, Route
from starlette.types import Message, Receive, Scope, Send

from powercontext import __version__
from powercontext.config import ServerSettings
from powercontext.memory.error_codes import BY_CODE
from powercontext.memory.errors import PowerContextError
from powercontext.server.auth import ApiKeyAuthority, KeyGrant
from powercontext.server.calls import Call
from powercontext.server.errors import UnauthorizedError, describe, error_response
from powercontext.server.gate import RequestGate
from powercontext.server.mcp_tools import INSTRUCTIONS, MEMORY_TOOLS
from powercontext.server.state import ServerState

log = logging.getLogger("powercontext.mcp")

MCP_PATH = "/mcp"
SERVER_NAME = "powercontext"


class McpRoute(Route):
    """The `/mcp` route. A plain Starlette route does not record itself in the request scope
    (FastAPI's routes do), so the access log and /metrics would label MCP traffic
    `unmatched`; this one records itself, and is labelled `/mcp`."""

    def __init__(self, endpoint: McpTools) -> None:
        super().__init__(
            MCP_PATH, endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False
        )

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match != Match.NONE:
            child = {**child, "route": self}
        return match, child


def bearer_token(headers: Mapping[str, str] | None) -> str | None:
    """The credentials of an `Authorization: Bearer <key>` header, else None."""
    value = (headers or {}).get("authorization")
    if not value:
        return None
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def _message_id(decoded: object) -> str | int | None:
    """The id to answer an invalid message with: its own when usable, else null (JSON-RPC 5)."""
    value = decoded.get("id") if isinstance(decoded, dict) else None
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no answer could carry it
            return None
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


_SURROGATE = (
    "Parse error: a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without "
    "its pair), which is not Unicode text; send each character whole"
)


def surrogate_error(raw: str | bytes) -> JSONRPCError | None:
    """The answer to a message the SDK's parser refused that Python's json reads: one whose
    strings hold a lone surrogate escape (JavaScript's JSON.stringify writes those for a
    string cut inside an emoji). It carries the message's id, where the SDK's -32700 has
    null: a stdio client would otherwise wait for that answer forever. None: any other
    refusal (not UTF-8, a BOM, too deep...), which the SDK's -32700 describes."""
    try:
        decoded = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    except (ValueError, RecursionError):
        return None
    try:
        json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return jsonrpc_error(PARSE_ERROR, _SURROGATE, decoded)
    except (ValueError, RecursionError):
        pass
    return None


def envelope_problem(decoded: object) -> str | None:
    """Why a decoded JSON value is not one JSON-RPC 2.0 message MCP accepts, else None.

    The SDK would answer these with its own pydantic text, which echoes the body back (entry
    text included) under the wrong code (-32602); this names the field instead, for -32600.
    """
    if isinstance(decoded, list):
        return "batch requests are not supported: send one JSON-RPC message at a time"
    if not isinstance(decoded, dict):
        return f"a JSON-RPC message must be an object, not {type(decoded).__name__}"
    if decoded.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if "method" in decoded:
        if not isinstance(decoded["method"], str):
            return 'the "method" member must be a string'
        if "params" in decoded and not isinstance(decoded["params"], dict):
            return 'the "params" member must be an object'
    elif "result" not in decoded and "error" not in decoded:
        return 'a request or notification needs a "method" member'
    if "id" in decoded and _message_id(decoded) is None:
        return 'the "id" member must be a string or an integer'
    try:
        jsonrpc_message_adapter.validate_python(decoded, by_name=False)
    except ValidationError:
        return "not a valid JSON-RPC 2.0 request, notification or response"
    return None


def jsonrpc_error(code: int, message: str, decoded: object = None) -> JSONRPCError:
    return JSONRPCError(
        jsonrpc="2.0", id=_message_id(decoded), error=ErrorData(code=code, message=message)
    )


def _problem_of(exc: ValidationError) -> str:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid"}
    where = ".".join(str(part) for part in first.get("loc", ())) or "params"
    return f"{where}: {first.get('msg', 'invalid')}"


class ClearProtocolErrors:
    """Server middleware: give the SDK's bare protocol errors a message a client can act on.

    The SDK answers malformed params and a request before the handshake alike with -32602
    "Invalid request parameters" and empty data; the code stays, the text says what was wrong.
    """

    async def __call__(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except ValidationError as exc:
            msg = f"Invalid params for {ctx.method}: {_problem_of(exc)}"
            raise MCPError(INVALID_PARAMS, msg) from None
        except MCPError as exc:
            if exc.code == INVALID_PARAMS and exc.message == _SDK_BARE_MESSAGE and not exc.data:
                raise MCPError(
                    INVALID_PARAMS,
                    f"{ctx.method} before initialize: send initialize, then "
                    "notifications/initialized, first",
                ) from None
            raise


_SDK_BARE_MESSAGE = "Invalid request parameters"


def _tool_error(code: str, message: str, details: dict[str, Any] | None = None) -> CallToolResult:
    # Text only: structured content would have to match the tool's (success) output schema.
    text = BY_CODE[code].mcp_prefix + message
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


def tool_error_of(exc: PowerContextError, tool_name: str) -> CallToolResult:
    """The tool error of a domain error: the code and safe message of the HTTP envelope."""
    status, code, message, details = describe(exc)
    if status >= 500:
        log.warning("mcp tool %s failed: %s (%s)", tool_name, code, type(exc).__name__)
    return _tool_error(code, message, details)


class McpTools:
    """The MCP server of one app: tool listing, tool calls and the `/mcp` ASGI endpoint."""

    def __init__(
        self, state: ServerState, settings: ServerSettings, *, stdio_api_key: str | None = None
    ) -> None:
        self._state = state
        self._settings = settings
        self._stdio_api_key = stdio_api_key
        self._tools = {tool.name: tool for tool in MEMORY_TOOLS}
        self._listing = ListToolsResult(tools=[tool.describe() for tool in MEMORY_TOOLS])
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=__version__,
            title="PowerContext",
            instructions=INSTRUCTIONS,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.server.middleware.append(ClearProtocolErrors())
        self._manager: StreamableHTTPSessionManager | None = None
        self._gate = RequestGate(state.authority, bind_host=settings.http.host)

    @property
    def authority(self) -> ApiKeyAuthority:
        return self._state.authority

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self._tools.get(name)
        return None if tool is None else tool.request.model_json_schema(mode="validation")

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        if params is not None and params.cursor is not None:
            # One page, no nextCursor: any cursor is one this server never gave (spec: -32602).
            raise MCPError(INVALID_PARAMS, "Invalid cursor: the tool list has a single page")
        return self._listing

    def check_stdio_key(self) -> None:
        """Refuse to serve stdio with a missing or unknown key (raises UnauthorizedError)."""
        self.authority.authenticate(self._stdio_api_key)

    def _grant(self, ctx: ServerRequestContext[Any]) -> KeyGrant:
        # The endpoint authenticated this HTTP request already; authenticating again here
        # keeps the tool fail-closed even if it were ever reached another way. A stdio call
        # has no HTTP request: it carries the key `powercontext mcp` was started with.
        if ctx.request is None:
            return self.authority.authenticate(self._stdio_api_key)
        headers = getattr(ctx.request, "headers", None)
        return self.authority.authenticate(bearer_token(headers))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        tool = self._tools.get(params.name)
        if tool is None:  # a protocol error (spec: tools, error handling), not a tool error
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name!r}")
        try:
            grant = self._grant(ctx)
            body = tool.request.model_validate(params.arguments or {})
            result = await tool.operation.perform(Call(grant, self._state), body)
        except ValidationError as exc:
            return _validation_error(exc)
        except PowerContextError as exc:
            self._state.metrics.observe_failure(str(getattr(exc, "code", "")))
            return tool_error_of(exc, tool.name)
        except Exception:
            log.exception("mcp tool %s raised an unexpected error", tool.name)
            return _tool_error("internal_error", "internal server error")
        structured = result.model_dump(mode="json")
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
            structured_content=structured,
        )

    def _security(self) -> TransportSecuritySettings:
        # The endpoint applies the gate's Host/Origin rule itself (`__call__`), the rule and
        # envelope of every other route. The SDK's own check differs (exact `host:port`
        # patterns), and answered plain-text 421/403 to requests the gate lets through.
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve `/mcp` for the duration of the app's lifespan (a manager runs only once)."""
        manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=True,
            security_settings=self._security(),
            max_request_body_size=min(
                self._settings.http.max_body_bytes, self._settings.http.max_write_body_bytes
            ),
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The `/mcp` ASGI endpoint: HTTP-level auth, then the SDK's streamable HTTP transport."""
        refusal = self._gate.refuse(scope)  # DNS rebinding (loopback binds), then the key
        if refusal is not None:
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in refusal.headers}
            await JSONResponse(refusal.payload, refusal.status, headers)(scope, receive, send)
            return
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
        if scope["method"] == "GET":
            # Stateless: no server-initiated messages, so a GET stream would stay open and
            # empty until the client gave up. The transport spec allows 405 instead.
            await _reply(405, jsonrpc_error(INVALID_REQUEST, _NO_GET), scope, receive, send)
            return
        if scope["method"] == "POST":
            replay = await self._screen_post(scope, receive, send)
            if replay is None:
                return
            receive = replay
        await manager.handle_request(scope, receive, send)

    async def _screen_post(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answer a POST body that is JSON but not one JSON-RPC message (-32600), else hand the
        body on unread. A body over the limit is handed on as read, for the SDK's 413."""
        limit = self._manager.max_request_body_size if self._manager else 0
        chunks: list[bytes] = []
        size, more, pending = 0, True, list[Message]()
        while more and size <= limit:
            message = await receive()
            pending.append(message)
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = bool(message.get("more_body", False))
        if not more and size <= limit:
            try:  # the SDK's parser: bounded nesting, where json.loads raises RecursionError
                decoded = pydantic_core.from_json(b"".join(chunks))
            except ValueError:
                error = surrogate_error(b"".join(chunks))
                if error is not None:
                    await _reply(400, error, scope, receive, send)
                    return None
                # else not JSON: the SDK answers -32700 with the parser's position
            else:
                problem = envelope_problem(decoded)
                if problem is not None:
                    error = jsonrpc_error(INVALID_REQUEST, f"Invalid Request: {problem}", decoded)
                    await _reply(400, error, scope, receive, send)
                    return None

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        return replay


_NO_GET = "Method Not Allowed: this server opens no SSE stream; POST JSON-RPC messages to /mcp"


async def _reply(
    status: int, error: JSONRPCError, scope: Scope, receive: Receive, send: Send
) -> None:
    body = error.model_dump(mode="json", by_alias=True, exclude_unset=True)
    headers = {"Allow": "POST"} if status == 405 else None
    await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)
