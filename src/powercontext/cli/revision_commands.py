"""`powercontext memory revise|reactivate|changes|head|history`: the revision side of a scope.

Registered on the `memory` group by memory_commands; like the other memory commands each runs
against a server through the SDK, or with --local on the embedded store.
"""

from __future__ import annotations

from typing import Annotated

import typer

from powercontext.cli import output
from powercontext.cli.errors import fail_on_errors
from powercontext.cli.memory_options import (
    AsOfRevision,
    Change,
    Citation,
    Connection,
    Scope,
    changed,
    memory_command,
    metadata_object,
)
from powercontext.memory.models import ReactivateMemoryRequest, ReviseMemoryRequest


@memory_command
@changed
def revise(
    citation: Citation,
    text: Annotated[str, typer.Argument(help="The new text.")],
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
    with fail_on_errors():
        request = ReviseMemoryRequest(
            citation=output.parse_citation(citation, scope),
            text=text,
            kind=kind,
            metadata=metadata_object(metadata) if metadata is not None else None,
            reason=change.reason,
            expected_revision=change.expected_revision,
            idempotency_key=change.idempotency_key,
        )
    result = connection.run(scope, lambda m: m.revise(request))
    output.print_write(result, connection.as_json)


@memory_command
@changed
def reactivate(citation: Citation, scope: Scope, *, change: Change, connection: Connection) -> None:
    """Make a retired entry active again (search finds it from the new revision on)."""
    with fail_on_errors():
        request = ReactivateMemoryRequest(
            citation=output.parse_citation(citation, scope),
            reason=change.reason,
            expected_revision=change.expected_revision,
            idempotency_key=change.idempotency_key,
        )
    result = connection.run(scope, lambda m: m.reactivate(request))
    output.print_write(result, connection.as_json)


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
