"""`powercontext memory retire|revise|reactivate|changes|head|history`: a scope's revisions.

Registered on the `memory` group by memory_commands; like the other memory commands each runs
against a server through the SDK, or with --local on the embedded store.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated

import typer

from powercontext.cli import output
from powercontext.cli.backends import CliMemory
from powercontext.cli.errors import fail_on_errors
from powercontext.cli.memory_options import (
    REQUEST_OPTIONS,
    AsOfRevision,
    Change,
    Citation,
    Connection,
    Scope,
    changed,
    memory_command,
    metadata_object,
    text_argument,
)
from powercontext.memory.models import (
    MemoryWriteResult,
    ReactivateMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
)


@memory_command
@changed
def revise(
    citation: Citation,
    text: Annotated[str, typer.Argument(help="The new text; `-` reads it from stdin.")],
    scope: Scope,
    kind: Annotated[str | None, typer.Option(help="A new kind (default: keep).")] = None,
    metadata: Annotated[
        str | None, typer.Option(help="A JSON object replacing the metadata (default: keep).")
    ] = None,
    *,
    change: Change,
    connection: Connection,
) -> None:
    """Write a new version of an entry; the old version stays citable."""
    with fail_on_errors(REQUEST_OPTIONS):
        request = ReviseMemoryRequest(
            citation=output.parse_citation(citation, scope),
            text=text_argument(text),
            kind=kind,
            metadata=metadata_object(metadata) if metadata is not None else None,
            **change.recorded(),
        )
    result = connection.run(scope, lambda m: m.revise(request))
    output.print_write(result, connection.as_json)


@memory_command
@changed
def retire(citation: Citation, scope: Scope, *, change: Change, connection: Connection) -> None:
    """Retire an entry (it stays citable, but is no longer found)."""
    _change_state(RetireMemoryRequest, citation, scope, change, connection)


@memory_command
@changed
def reactivate(citation: Citation, scope: Scope, *, change: Change, connection: Connection) -> None:
    """Make a retired entry active again (search finds it from the new revision on)."""
    _change_state(ReactivateMemoryRequest, citation, scope, change, connection)


def _change_state(
    kind: type[RetireMemoryRequest] | type[ReactivateMemoryRequest],
    citation: str,
    scope: str,
    change: Change,
    connection: Connection,
) -> None:
    """Retire or reactivate: a citation and the change's options, nothing else."""
    with fail_on_errors(REQUEST_OPTIONS):
        request = kind(citation=output.parse_citation(citation, scope), **change.recorded())

    def write(memory: CliMemory) -> Awaitable[MemoryWriteResult]:
        if isinstance(request, RetireMemoryRequest):
            return memory.retire(request)
        return memory.reactivate(request)

    output.print_write(connection.run(scope, write), connection.as_json)


@memory_command
def changes(
    scope: Scope,
    since: Annotated[
        int, typer.Option(min=0, help="Changes after this revision (0: from the start).")
    ] = 0,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Changes per page.")] = 100,
    *,
    connection: Connection,
) -> None:
    """The change log of a scope, oldest first: what each revision added, revised or retired."""
    page = connection.run(scope, lambda m: m.changes(since, limit=limit))
    output.print_changes(page, connection.as_json)


@memory_command
def head(
    scope: Scope,
    *,
    connection: Connection,
) -> None:
    """The head revision of a scope (none for an empty scope)."""
    ref = connection.run(scope, lambda m: m.head())
    output.print_head(ref, scope, connection.as_json)


@memory_command
def history(
    entry: Annotated[
        str, typer.Argument(help="An ENTRY_ID, or any citation of the entry (REVISION:ID:VERSION).")
    ],
    scope: Scope,
    revision: AsOfRevision = None,
    *,
    connection: Connection,
) -> None:
    """Every version of one entry and every change that touched it, newest first."""
    with fail_on_errors():
        entry_id = output.parse_citation(entry, scope).entry_id if ":" in entry else entry
    found = connection.run(scope, lambda m: m.history(entry_id, revision=revision))
    output.print_history(found, connection.as_json, revision=revision)
