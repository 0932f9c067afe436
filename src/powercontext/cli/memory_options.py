"""What every `powercontext memory` command shares: its options and how it runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from powercontext.cli.backends import CliMemory, Target, open_memory
from powercontext.cli.errors import fail_on_errors
from powercontext.memory.errors import MemoryValidationError

T = TypeVar("T")

Scope = Annotated[str, typer.Option("--scope", "-s", help="The scope id.")]
Local = Annotated[
    bool,
    typer.Option(
        "--local", help="Use the embedded store (POWERCONTEXT_SERVER_* settings), not a server."
    ),
]
ServerUrl = Annotated[
    str | None,
    typer.Option(
        "--server-url",
        envvar="POWERCONTEXT_CLIENT_SERVER_URL",
        help="The server (default http://127.0.0.1:8000).",
        show_envvar=True,
    ),
]
ApiKey = Annotated[
    str | None,
    typer.Option(
        "--api-key", envvar="POWERCONTEXT_CLIENT_API_KEY", help="Bearer API key.", show_envvar=True
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
HitLimit = Annotated[int, typer.Option(min=1, max=100, help="Maximum hits (per query).")]
ModeName = Annotated[str, typer.Option(help="auto, fts, vector or hybrid.")]


def run(
    local: bool,
    server_url: str | None,
    api_key: str | None,
    scope: str,
    work: Callable[[CliMemory], Awaitable[T]],
) -> T:
    async def go() -> T:
        async with open_memory(Target(local, server_url, api_key), scope) as memory:
            return await work(memory)

    with fail_on_errors():
        return asyncio.run(go())


def metadata_object(value: str | None) -> dict[str, Any]:
    if value is None:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise MemoryValidationError("--metadata must be a JSON object") from exc
    if not isinstance(parsed, dict):
        raise MemoryValidationError("--metadata must be a JSON object")
    return parsed
