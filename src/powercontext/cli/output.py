"""How the CLI prints results: rich tables for people, plain JSON (`--json`) for scripts.

The JSON of a search hit has the HTTP API's shape (a nested `citation`) whichever backend
answered, so a script can pass it straight to `memory get` and to the API.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from powercontext.cli.wording import counted, phrase_lines
from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.history import MemoryEntryHistory
from powercontext.memory.models import (
    MemoryChange,
    MemoryChangesPage,
    MemoryCitation,
    MemoryEntriesPage,
    MemoryEntry,
    MemoryHit,
    MemoryRef,
    MemorySearchPage,
    MemoryWriteResult,
)

console = Console()
errors = Console(stderr=True)


def citation_token(citation: MemoryCitation) -> str:
    """`REVISION:ENTRY_ID:ENTRY_VERSION_ID`: the compact citation `get` and `retire` accept."""
    return f"{citation.memory_ref.revision}:{citation.entry_id}:{citation.entry_version_id}"


def parse_citation(value: str, scope_id: str) -> MemoryCitation:
    """A citation token, or a citation as JSON (from `--json` output or the HTTP API)."""
    try:
        if value.lstrip().startswith("{"):
            return MemoryCitation.model_validate_json(value)
        revision, entry_id, version_id = value.split(":")
        return MemoryCitation(
            memory_ref=MemoryRef(scope_id=scope_id, revision=int(revision)),
            entry_id=entry_id,
            entry_version_id=version_id,
        )
    except ValueError as exc:
        raise MemoryValidationError(
            "a citation is REVISION:ENTRY_ID:ENTRY_VERSION_ID or a JSON citation object"
        ) from exc


def print_json(payload: Any) -> None:
    try:
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()


def stdout_closed() -> NoReturn:
    """The reader of stdout went away (`... | head`): stop quietly with exit status 1, as
    rich's console does for the human output.

    stdout is pointed at /dev/null first, so the interpreter's final flush of what is still
    buffered cannot raise again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (a test runner)
        pass
    raise typer.Exit(1)


def hit_json(hit: MemoryHit) -> dict[str, Any]:
    """The API's hit: the runtime hit's own JSON dump (every field, datetimes as the API
    renders them), its flat revision and ids nested as the `citation` the API returns."""
    cited = {"memory_ref", "entry_id", "entry_version_id"}
    return {
        "citation": hit.citation.model_dump(mode="json"),
        **hit.model_dump(mode="json", exclude=cited),
    }


def search_json(page: MemorySearchPage) -> dict[str, Any]:
    return {
        "memory_ref": page.memory_ref.model_dump(mode="json") if page.memory_ref else None,
        "mode": page.mode,
        "hits": [hit_json(hit) for hit in page.hits],
    }


def _ref(ref: MemoryRef | None) -> str:
    return f"{ref.scope_id}@{ref.revision}" if ref else "(empty scope)"


def print_phrases(phrases: Sequence[str]) -> None:
    """One message, wrapped at the console's width only between phrases."""
    for line in phrase_lines(phrases, console.width):
        console.print(Text(line))


def _print_row(head: str, text: str, citation: MemoryCitation) -> None:
    """One hit or entry as a block: a head line, the text (wrapped), and the citation alone on
    its line, never wrapped, so it can be copied whole at 80 columns (a citation token is
    about 70 characters: it cannot fit a table cell beside the text)."""
    console.print(Text(head, style="cyan"), soft_wrap=True)
    console.print(Padding(Text(text), (0, 0, 0, 4), expand=False))
    console.print(Text("    " + citation_token(citation), style="dim"), soft_wrap=True)


def _print_entries(entries: tuple[MemoryEntry, ...], title: str) -> None:
    console.print(Text(title, style="bold"), soft_wrap=True)
    for entry in entries:
        state = "" if entry.active else " (retired)"
        _print_row(f"  {entry.kind} · v{entry.version}{state}", entry.text, entry.citation)


def print_write(result: MemoryWriteResult, as_json: bool) -> None:
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    console.print(
        f"[green]revision {result.memory_ref.revision}[/] of {escape(result.memory_ref.scope_id)}"
    )
    if result.entries:
        _print_entries(result.entries, "written")
    if pending := result.vectors_pending:
        verb = "awaits" if pending == 1 else "await"
        console.print(
            f"[yellow]{counted(pending, 'entry')} {verb} embedding: run `powercontext reindex`"
        )


def print_search(page: MemorySearchPage, as_json: bool) -> None:
    if as_json:
        print_json(search_json(page))
        return
    title = f"{counted(len(page.hits), 'hit')} · {page.mode} · {_ref(page.memory_ref)}"
    console.print(Text(title, style="bold"), soft_wrap=True)
    for rank, hit in enumerate(page.hits, start=1):
        _print_row(f"{rank:>3}. {hit.score:.4f} · {hit.kind}", hit.text, hit.citation)


def print_search_batch(
    queries: Sequence[str], pages: Sequence[MemorySearchPage], as_json: bool
) -> None:
    """One block per query, in order; every page answers at the same revision."""
    if as_json:
        ref = pages[0].memory_ref if pages else None
        print_json(
            {
                "memory_ref": ref.model_dump(mode="json") if ref else None,
                "pages": [
                    {"query": q, **search_json(p)} for q, p in zip(queries, pages, strict=True)
                ],
            }
        )
        return
    for number, (query, page) in enumerate(zip(queries, pages, strict=True), start=1):
        if number > 1:
            console.print()
        console.print(Text(f"[{number}] {query}", style="bold cyan"), soft_wrap=True)
        print_search(page, as_json=False)


def print_entries(page: MemoryEntriesPage, as_json: bool) -> None:
    if as_json:
        print_json(page.model_dump(mode="json"))
        return
    _print_entries(page.entries, f"{counted(len(page.entries), 'entry')} · {_ref(page.memory_ref)}")
    if page.next_cursor:
        console.print(f"more: --cursor {page.next_cursor}")


def print_entry(entry: MemoryEntry, as_json: bool) -> None:
    if as_json:
        print_json(entry.model_dump(mode="json"))
        return
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for name, value in (
        ("text", entry.text),
        ("kind", entry.kind),
        ("metadata", json.dumps(entry.metadata, ensure_ascii=False)),
        ("version", str(entry.version)),
        # The flag is the entry's state now: the version `get ENTRY_ID --revision N` shows was
        # active at N, and a bare "active false" beside it reads as a contradiction.
        ("active at head", str(entry.active).lower()),
        ("created_at", entry.created_at.isoformat()),
    ):
        table.add_row(name, Text(value))
    console.print(table)
    console.print(Text("citation", style="bold"), soft_wrap=True)
    console.print(Text("    " + citation_token(entry.citation)), soft_wrap=True)


def _change_line(change: MemoryChange) -> str:
    previous = change.previous_entry_version_id
    was = f"\n    was     {previous}" if previous else ""
    reason = f" · {change.reason}" if change.reason else ""
    return (
        f"  r{change.revision} {change.op} · {change.created_at.isoformat()}{reason}\n"
        f"    entry   {change.entry_id}\n    version {change.entry_version_id}{was}"
    )


def print_changes(page: MemoryChangesPage, as_json: bool) -> None:
    if as_json:
        print_json(page.model_dump(mode="json"))
        return
    title = f"{counted(len(page.changes), 'change')} · {_ref(page.memory_ref)}"
    console.print(Text(title, style="bold"), soft_wrap=True)
    for change in page.changes:
        console.print(Text(_change_line(change)), soft_wrap=True)
    # The page has no "more" flag, but it never splits a revision and `memory_ref` is the
    # head: changes remain exactly when the page stopped before the head.
    head = page.memory_ref.revision if page.memory_ref else 0
    if page.next_since_revision < head:
        console.print(f"more: --since {page.next_since_revision}", soft_wrap=True)


def print_head(ref: MemoryRef | None, scope_id: str, as_json: bool) -> None:
    if as_json:
        print_json({"memory_ref": ref.model_dump(mode="json") if ref else None})
        return
    console.print(Text(_ref(ref) if ref else f"{scope_id}: empty scope"), soft_wrap=True)


def print_history(
    history: MemoryEntryHistory, as_json: bool, *, revision: int | None = None
) -> None:
    """`revision`: the one asked for (None: the head). A version is labelled active when it is
    the history's `active_version`, the one active at that revision (an entry's own `active`
    flag says whether it is active at the head, so it cannot label an older revision)."""
    if as_json:
        print_json(history.model_dump(mode="json"))
        return
    versions = counted(len(history.versions), "version")
    title = f"entry {history.entry_id} · {versions} · {_ref(history.memory_ref)}"
    at = "head" if revision is None else f"revision {revision}"
    active = history.active_version
    active_id = active.entry_version_id if active is not None else None
    console.print(Text(title, style="bold"), soft_wrap=True)
    for record in history.versions:
        entry = record.entry
        state = "active" if entry.entry_version_id == active_id else f"not active at {at}"
        head = f"  v{entry.version} · {entry.kind} · {entry.created_at.isoformat()} · {state}"
        _print_row(head, entry.text, entry.citation)
    console.print(Text("changes", style="bold"))
    for change in history.changes:
        console.print(Text(_change_line(change)), soft_wrap=True)
    if history.active_version is None:
        console.print(f"no active version at revision {history.memory_ref.revision} (retired)")
    if not history.complete:
        console.print("[yellow]the change log is longer than one lookup reads: history cut")


def print_error(code: str, message: str) -> None:
    # One line whatever the width, so a log or a grep sees the whole message.
    errors.print(
        f"[red]error[/] [bold]{escape(code)}[/]: {escape(message)}", highlight=False, soft_wrap=True
    )
