"""`powercontext memory remember|search|list|get|retire`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from powercontext.cli import output
from powercontext.cli.backends import CliMemory, Target, open_memory
from powercontext.cli.errors import EXIT_FAILURE, fail_on_errors
from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    SearchMemoryRequest,
    SearchMode,
)

app = typer.Typer(help="Remember, search and manage the Memory of a scope.", no_args_is_help=True)
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


def _run(
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


def _metadata(value: str | None) -> dict[str, Any]:
    if value is None:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise MemoryValidationError("--metadata must be a JSON object") from exc
    if not isinstance(parsed, dict):
        raise MemoryValidationError("--metadata must be a JSON object")
    return parsed


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help="The text to remember.")],
    scope: Scope,
    kind: Annotated[str, typer.Option(help="The entry's kind.")] = "fact",
    metadata: Annotated[str | None, typer.Option(help="A JSON object.")] = None,
    expected_revision: Annotated[
        int | None, typer.Option(help="Refuse unless the scope is at this revision.")
    ] = None,
    reason: Annotated[str | None, typer.Option(help="Recorded in the change log.")] = None,
    thread: Annotated[
        str | None, typer.Option(help="The conversation, session or document it belongs to.")
    ] = None,
    occurred_at: Annotated[
        str | None, typer.Option(help="When the event happened (ISO 8601; default: now).")
    ] = None,
    local: Local = False,
    server_url: ServerUrl = None,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Remember one entry."""
    with fail_on_errors():
        # model_validate parses --occurred-at exactly as the HTTP API does.
        request = RememberMemoryRequest.model_validate(
            {
                "kind": kind,
                "text": text,
                "metadata": _metadata(metadata),
                "expected_revision": expected_revision,
                "reason": reason,
                "thread": thread,
                "occurred_at": occurred_at,
            }
        )
    result = _run(local, server_url, api_key, scope, lambda m: m.remember(request))
    output.print_write(result, as_json)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    scope: Scope,
    limit: Annotated[int, typer.Option(min=1, max=100, help="Maximum hits.")] = 10,
    mode: Annotated[str, typer.Option(help="auto, fts, vector or hybrid.")] = "auto",
    local: Local = False,
    server_url: ServerUrl = None,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Search a scope; prints the final hits."""
    with fail_on_errors():
        request = SearchMemoryRequest(query=query, limit=limit, mode=_mode(mode))
    page = _run(local, server_url, api_key, scope, lambda m: m.search(request))
    output.print_search(page, as_json)


def _mode(value: str) -> SearchMode:
    modes: dict[str, SearchMode] = {
        "auto": "auto",
        "fts": "fts",
        "vector": "vector",
        "hybrid": "hybrid",
    }
    if value not in modes:
        raise MemoryValidationError("--mode must be auto, fts, vector or hybrid")
    return modes[value]


@app.command("list")
def list_entries(
    scope: Scope,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Entries per page.")] = 100,
    cursor: Annotated[str | None, typer.Option(help="`next_cursor` of the last page.")] = None,
    revision: Annotated[int | None, typer.Option(help="List this revision (default head).")] = None,
    local: Local = False,
    server_url: ServerUrl = None,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """List the active entries of a scope, oldest first."""
    page = _run(
        local,
        server_url,
        api_key,
        scope,
        lambda m: m.list(revision=revision, cursor=cursor, limit=limit),
    )
    output.print_entries(page, as_json)


@app.command()
def get(
    citation: Annotated[
        str, typer.Argument(help="REVISION:ENTRY_ID:ENTRY_VERSION_ID, or a JSON citation.")
    ],
    scope: Scope,
    local: Local = False,
    server_url: ServerUrl = None,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Show the exact entry version a citation names."""
    with fail_on_errors():
        cited = output.parse_citation(citation, scope)
    entry = _run(local, server_url, api_key, scope, lambda m: m.get(cited))
    if entry is None:
        output.print_error("not_found", "the citation names no entry version in this scope")
        raise typer.Exit(EXIT_FAILURE)
    output.print_entry(entry, as_json)


@app.command()
def retire(
    citation: Annotated[
        str, typer.Argument(help="The entry's current version, as REVISION:ENTRY_ID:VERSION_ID.")
    ],
    scope: Scope,
    reason: Annotated[str | None, typer.Option(help="Recorded in the change log.")] = None,
    local: Local = False,
    server_url: ServerUrl = None,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Retire an entry (it stays citable, but is no longer found)."""
    with fail_on_errors():
        request = RetireMemoryRequest(
            citation=output.parse_citation(citation, scope), reason=reason
        )
    result = _run(local, server_url, api_key, scope, lambda m: m.retire(request))
    output.print_write(result, as_json)
