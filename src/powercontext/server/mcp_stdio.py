"""`powercontext mcp`: the MCP tools over stdio, for desktop and IDE clients that start the
server as a subprocess. The runtime is opened in-process (the embedded store by default, or
whatever POWERCONTEXT_SERVER_DATABASE_URL names); logs go to stderr, stdout is the protocol."""

from __future__ import annotations

import asyncio

from powercontext.config import ServerSettings
from powercontext.memory.errors import UnauthorizedError
from powercontext.runtime import open_runtime
from powercontext.server.auth import ApiKeyAuthority
from powercontext.server.capability import log_search_capability
from powercontext.server.logs import configure_logging
from powercontext.server.mcp import McpTools
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
        log_search_capability(runtime)
        await McpTools(state, settings, stdio_api_key=api_key).serve_stdio()
