"""`powercontext mcp`: the MCP tools over stdio."""

from __future__ import annotations

from typing import Annotated

import typer

from powercontext.cli.errors import fail_on_errors
from powercontext.cli.running import naming_the_database


def mcp(
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="POWERCONTEXT_MCP_API_KEY",
            show_envvar=True,
            help="The key whose scopes the tools may use; needed when the server "
            "configuration has API keys (POWERCONTEXT_SERVER_HTTP_API_KEYS).",
        ),
    ] = None,
) -> None:
    """Serve the MCP tools over stdio (for desktop and IDE clients); logs go to stderr.

    Uses the same store and settings as `powercontext server run` (POWERCONTEXT_SERVER_*).
    """
    with fail_on_errors():
        from powercontext.config import ServerSettings
        from powercontext.server.mcp_stdio import serve_mcp_stdio

        with naming_the_database():
            serve_mcp_stdio(ServerSettings(), api_key)
