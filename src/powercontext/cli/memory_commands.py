"""`powercontext memory remember|search|list|get` (and, from revision_commands,
revise|reactivate|changes|head|history; from transfer_commands, export|import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from powercontext.cli import (
    forget_commands,
    output,
    revision_commands,
    scope_commands,
    transfer_commands,
)
from powercontext.cli.errors import EXIT_FAILURE, fail_on_errors
from powercontext.cli.memory_options import (
    REQUEST_OPTIONS,
    AsOfRevision,
    Connection,
    ExpectedRevision,
    FilterOption,
    IdempotencyKey,
    OccurredAt,
    Reason,
    Scope,
    SearchOptions,
    Thread,
    filter_object,
    memory_command,
    metadata_object,
    read_stdin,
    search_options,
    text_argument,
)
from powercontext.memory.errors import MemoryValidationError, citation_not_found
from powercontext.memory.models import (
    RememberMemoryRequest,
    SearchMemoryRequest,
)

app = typer.Typer(help="Remember, search and manage the Memory of a scope.", no_args_is_help=True)

# Shown under each command's options: a new user's first question is how a call looks.
_REMEMBER_EXAMPLES = """Examples:
  powercontext memory remember "We deploy on Fridays." -s project
  cat notes.md | powercontext memory remember - -s project --kind note
  powercontext memory remember "Notes." -s project --local   # no server"""
_SEARCH_EXAMPLES = """Examples:
  powercontext memory search "when do we deploy?" -s project
  powercontext memory search deploy -s project --mode fts --limit 3
  powercontext memory search deploy -s project --json | jq -r '.hits[0].text'"""
_GET_EXAMPLES = """Examples:
  powercontext memory get 1:6f1c...:a93e... -s project     # a citation token
  powercontext memory get 6f1c... -s project --revision 2  # an entry id"""


@app.command(epilog=_REMEMBER_EXAMPLES)
@memory_command
def remember(
    text: Annotated[str, typer.Argument(help="The text to remember; `-` reads it from stdin.")],
    scope: Scope,
    kind: Annotated[str, typer.Option(help="The entry's kind.")] = "fact",
    metadata: Annotated[str | None, typer.Option(help="A JSON object.")] = None,
    expected_revision: ExpectedRevision = None,
    reason: Reason = None,
    thread: Thread = None,
    occurred_at: OccurredAt = None,
    idempotency_key: IdempotencyKey = None,
    *,
    connection: Connection,
) -> None:
    """Remember one entry."""
    with fail_on_errors(REQUEST_OPTIONS):
        # model_validate parses --occurred-at exactly as the HTTP API does.
        request = RememberMemoryRequest.model_validate(
            {
                "kind": kind,
                "text": text_argument(text),
                "metadata": metadata_object(metadata),
                "expected_revision": expected_revision,
                "reason": reason,
                "thread": thread,
                "occurred_at": occurred_at,
                "idempotency_key": idempotency_key,
            }
        )
    result = connection.run(scope, lambda m: m.remember(request))
    output.print_write(result, connection.as_json)


@app.command(epilog=_SEARCH_EXAMPLES)
@memory_command
@search_options
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    scope: Scope,
    *,
    options: SearchOptions,
    connection: Connection,
) -> None:
    """Search a scope and print the final hits.

    --min-score and --min-similarity drop the full-text and vector candidates
    below them."""
    with fail_on_errors(REQUEST_OPTIONS):
        request = SearchMemoryRequest(query=query, **options.request_fields())
    page = connection.run(scope, lambda m: m.search(request))
    output.print_search(page, connection.as_json)


@app.command("search-batch")
@memory_command
@search_options
def search_batch(
    scope: Scope,
    queries_file: Annotated[
        str, typer.Argument(help="A file of queries, one per line; `-` (default): stdin.")
    ] = "-",
    *,
    options: SearchOptions,
    connection: Connection,
) -> None:
    """Run many searches in one call, all at one revision.

    One query per line (blank lines are skipped); prints one block of hits
    per query, in order. The filter and floors apply to every query."""
    with fail_on_errors(REQUEST_OPTIONS):
        queries = read_queries(queries_file)
        shared = options.request_fields()
        requests = [SearchMemoryRequest.model_validate({"query": q, **shared}) for q in queries]
    pages = connection.run(scope, lambda m: m.search_batch(requests))
    output.print_search_batch(queries, pages, connection.as_json)


def read_queries(source: str) -> list[str]:
    if source == "-":
        text = read_stdin()
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise MemoryValidationError(f"cannot read {source}: {exc.strerror}") from exc
    # A BOM (Windows editors write one) is no part of the first query; strip() keeps it.
    text = text.removeprefix("\ufeff")
    queries = [line.strip() for line in text.splitlines() if line.strip()]
    if not queries:
        raise MemoryValidationError("no queries: give one query per line")
    return queries


@app.command("list")
@memory_command
def list_entries(
    scope: Scope,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Entries per page.")] = 100,
    cursor: Annotated[str | None, typer.Option(help="`next_cursor` of the last page.")] = None,
    revision: Annotated[
        int | None, typer.Option(min=1, help="List this revision (default the head).")
    ] = None,
    where: FilterOption = None,
    *,
    connection: Connection,
) -> None:
    """List the active entries of a scope, oldest first."""
    with fail_on_errors():
        parsed = filter_object(where)
    page = connection.run(
        scope,
        lambda m: m.list(revision=revision, cursor=cursor, limit=limit, where=parsed),
    )
    output.print_entries(page, connection.as_json)


@app.command(epilog=_GET_EXAMPLES)
@memory_command
def get(
    citation: Annotated[
        str,
        typer.Argument(
            help="REVISION:ENTRY_ID:ENTRY_VERSION_ID, a JSON citation, or an ENTRY_ID (its "
            "version active at --revision, default the head)."
        ),
    ],
    scope: Scope,
    revision: AsOfRevision = None,
    *,
    connection: Connection,
) -> None:
    """Show the exact entry version a citation names, or an entry's version by its id."""
    if ":" not in citation and not citation.lstrip().startswith("{"):
        found = connection.run(scope, lambda m: m.get_entry(citation, revision=revision))
        output.print_entry(found, connection.as_json)
        return
    with fail_on_errors():
        cited = output.parse_citation(citation, scope)
    entry = connection.run(scope, lambda m: m.get(cited))
    if entry is None:
        output.print_error("not_found", citation_not_found(scope, cited.memory_ref.scope_id))
        raise typer.Exit(EXIT_FAILURE)
    output.print_entry(entry, connection.as_json)


app.command()(revision_commands.retire)
app.command()(revision_commands.revise)
app.command()(revision_commands.reactivate)
app.command()(revision_commands.changes)
app.command()(revision_commands.head)
app.command()(revision_commands.history)
app.command()(scope_commands.scopes)
app.command()(forget_commands.forget)
app.command("forget-scope")(forget_commands.forget_scope)
app.command("export")(transfer_commands.export)
app.command("import")(transfer_commands.import_)
