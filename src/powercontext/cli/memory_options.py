"""What every `powercontext memory` command shares: its options and how it runs."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError

from powercontext.cli.backends import CliMemory, Target, open_memory
from powercontext.cli.errors import fail_on_errors
from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.filters import MemoryFilter

T = TypeVar("T")

Scope = Annotated[str, typer.Option("--scope", "-s", help="The scope id.")]
Citation = Annotated[
    str, typer.Argument(help="The entry's current version, as REVISION:ENTRY_ID:VERSION_ID.")
]
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
FilterOption = Annotated[
    str | None,
    typer.Option(
        "--filter",
        help='A JSON filter, e.g. \'{"kinds": ["fact"], "metadata": {"project": {"eq": "x"}}}\'.',
    ),
]
HitLimit = Annotated[int, typer.Option(min=1, max=100, help="Maximum hits (per query).")]
ModeName = Annotated[str, typer.Option(help="auto, fts, vector or hybrid.")]
ExpectedRevision = Annotated[
    int | None, typer.Option(help="Refuse unless the scope is at this revision.")
]
SearchRevision = Annotated[
    int | None, typer.Option(min=1, help="Search as of this revision (default the head).")
]


@dataclass(frozen=True)
class Connection:
    """Where a command's Memory is (a server, or the embedded store with --local) and whether
    to print JSON: the options every memory command shares."""

    target: Target
    as_json: bool

    def run(self, scope: str, work: Callable[[CliMemory], Awaitable[T]]) -> T:
        """Run `work` on the scope's Memory; a failure is reported and exits non-zero."""

        async def go() -> T:
            async with open_memory(self.target, scope) as memory:
                return await work(memory)

        with fail_on_errors():
            return asyncio.run(go())


_SHARED_OPTIONS = [
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=option)
    for name, default, option in (
        ("local", False, Local),
        ("server_url", None, ServerUrl),
        ("api_key", None, ApiKey),
        ("as_json", False, AsJson),
    )
]


def memory_command(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command` the shared options (--local, --server-url, --api-key, --json), after its
    own, as one `connection` argument: each command then declares only what is its own."""
    own = inspect.signature(command, eval_str=True).parameters.values()

    @functools.wraps(command)
    def with_connection(
        *args: Any,
        local: bool,
        server_url: str | None,
        api_key: str | None,
        as_json: bool,
        **kwargs: Any,
    ) -> None:
        connection = Connection(Target(local, server_url, api_key), as_json)
        command(*args, connection=connection, **kwargs)

    # Typer reads the options from the signature.
    with_connection.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*(p for p in own if p.name != "connection"), *_SHARED_OPTIONS]
    )
    return with_connection


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


def filter_object(value: str | None) -> MemoryFilter | None:
    if value is None:
        return None
    try:
        return MemoryFilter.model_validate_json(value)
    except ValidationError as exc:
        raise MemoryValidationError(f"--filter: {exc.errors()[0]['msg']}") from exc
