"""`powercontext mcp`: the MCP tools over stdio, for desktop and IDE clients that start the
server as a subprocess. The runtime is opened in-process (the embedded store by default, or
whatever POWERCONTEXT_SERVER_DATABASE_URL names); logs go to stderr, stdout is the protocol."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, JSONRPCError, JSONRPCRequest, JSONRPCResponse
from pydantic import ValidationError

from powercontext.config import ServerSettings
from powercontext.memory.errors import UnauthorizedError
from powercontext.runtime import open_runtime
from powercontext.server.auth import ApiKeyAuthority
from powercontext.server.capability import announced_capability
from powercontext.server.logs import configure_logging
from powercontext.server.mcp import McpTools, envelope_problem, jsonrpc_error, surrogate_error
from powercontext.server.metrics import ServerMetrics
from powercontext.server.state import ServerState


def serve_mcp_stdio(settings: ServerSettings | None = None, api_key: str | None = None) -> None:
    """Serve until the client closes stdin. With API keys configured, `api_key` must be one of
    them (checked before anything is opened) and every tool call is held to its scopes."""
    settings = settings if settings is not None else ServerSettings()
    authority = ApiKeyAuthority.from_config(settings.http)
    try:
        authority.authenticate(api_key)
    except UnauthorizedError as exc:  # its message names the HTTP header, not stdio's options
        raise UnauthorizedError(
            f"{'an unknown' if api_key else 'no'} API key for the MCP tools: pass --api-key "
            "or set POWERCONTEXT_MCP_API_KEY to a key of POWERCONTEXT_SERVER_HTTP_API_KEYS"
        ) from exc
    configure_logging(settings.log_format)
    asyncio.run(_serve(settings, authority, api_key))


async def _serve(settings: ServerSettings, authority: ApiKeyAuthority, api_key: str | None) -> None:
    state = ServerState(authority=authority, metrics=ServerMetrics())
    async with open_runtime(settings) as runtime:
        state.runtime = runtime
        async with announced_capability(runtime):
            await serve_stdio(McpTools(state, settings, stdio_api_key=api_key))


log = logging.getLogger("powercontext.mcp")

# How long requests still running when the client closes stdin may take to be answered.
DRAIN_SECONDS = 30.0

# The SDK reader passes an Exception on for a line it cannot read, and the server loop then
# drops it without a word: the client would wait for that answer forever.
_Inbound = SessionMessage | Exception


async def serve_stdio(tools: McpTools) -> None:
    """Serve the tools over this process's stdin/stdout until the client closes stdin."""
    tools.check_stdio_key()
    async with stdio_server() as (read, write):
        await _StdioRelay(read, write).serve(tools.server)


class _StdioRelay:
    """Between the SDK's stdio streams and the server loop: answers unreadable lines, and at
    EOF lets the requests already read finish (the SDK would answer them "Connection closed"
    and drop their results, so `printf '...' | powercontext mcp` got nothing back)."""

    def __init__(self, read: Any, write: Any) -> None:
        self._read, self._write = read, write
        self._pending: set[str | int] = set()
        self._answered = anyio.Event()

    async def serve(self, server: Any) -> None:
        inbound, loop_reads = anyio.create_memory_object_stream[_Inbound](0)
        loop_writes, outbound = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as group:
            group.start_soon(self._write_output, outbound)
            reading = anyio.CancelScope()
            group.start_soon(self._read_input, inbound, loop_writes.clone(), reading)
            async with loop_writes:
                await server.run(loop_reads, loop_writes, server.create_initialization_options())
            reading.cancel()  # the loop ended first: stop waiting on stdin

    async def _read_input(self, inbound: Any, replies: Any, scope: anyio.CancelScope) -> None:
        with scope:
            async with inbound, replies:
                async for item in self._read:
                    if isinstance(item, Exception):
                        error = _error_for(item)
                        if error is not None:
                            await replies.send(SessionMessage(error))
                        continue
                    if isinstance(item.message, JSONRPCRequest):
                        self._pending.add(item.message.id)
                    await inbound.send(item)
                with anyio.move_on_after(DRAIN_SECONDS):
                    while self._pending:
                        await self._answered.wait()
                        self._answered = anyio.Event()

    async def _write_output(self, outbound: Any) -> None:
        async with outbound, self._write:  # closing it ends the SDK's stdout writer
            async for item in outbound:
                await self._write.send(item)
                if isinstance(item.message, JSONRPCResponse | JSONRPCError):
                    self._pending.discard(item.message.id)
                    self._answered.set()


def _error_for(exc: Exception) -> Any:
    if not isinstance(exc, ValidationError):
        log.warning("mcp stdio: unreadable input (%s)", type(exc).__name__)
        return jsonrpc_error(PARSE_ERROR, "Parse error: the line could not be read")
    errors = exc.errors()
    if any(e["type"] == "json_invalid" for e in errors):
        raw = errors[0].get("input")
        if isinstance(raw, str) and not raw.strip():
            return None  # a blank line is not a message
        readable = surrogate_error(raw) if isinstance(raw, str) else None
        return readable or jsonrpc_error(
            PARSE_ERROR, "Parse error: a line must be one JSON-RPC message"
        )
    decoded = _whole_message(errors)
    problem = envelope_problem(decoded) or "not a valid JSON-RPC 2.0 message"
    return jsonrpc_error(INVALID_REQUEST, f"Invalid Request: {problem}", decoded)


def _whole_message(errors: list[Any]) -> object:
    """The decoded line, recovered from the union's errors: a non-object fails each arm at the
    top (loc of one), and an object misses a member of some arm (the input is the object)."""
    for error in errors:
        loc = error.get("loc", ())
        if len(loc) == 1 or (len(loc) == 2 and error["type"] == "missing"):
            return error.get("input")
    return None
