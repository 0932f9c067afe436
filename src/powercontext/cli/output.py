"""How the CLI prints results: rich tables for people, plain JSON (`--json`) for scripts.

The JSON of a search hit has the HTTP API's shape (a nested `citation`) whichever backend
answered, so a script can pass it straight to `memory get` and to the API.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.models import (
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
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")


def hit_json(hit: MemoryHit) -> dict[str, Any]:
    return {
        "citation": hit.citation.model_dump(mode="json"),
        "kind": hit.kind,
        "text": hit.text,
        "metadata": hit.metadata,
        "score": hit.score,
        "matched_by": list(hit.matched_by),
    }


def search_json(page: MemorySearchPage) -> dict[str, Any]:
    return {
        "memory_ref": page.memory_ref.model_dump(mode="json") if page.memory_ref else None,
        "mode": page.mode,
        "hits": [hit_json(hit) for hit in page.hits],
    }


def _ref(ref: MemoryRef | None) -> str:
    return f"{ref.scope_id}@{ref.revision}" if ref else "(empty scope)"


def _entries_table(entries: tuple[MemoryEntry, ...], title: str) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("kind", style="cyan", no_wrap=True)
    table.add_column("text", overflow="fold")
    table.add_column("v", justify="right")
    table.add_column("citation", style="dim", overflow="fold")
    for entry in entries:
        table.add_row(
            Text(entry.kind), Text(entry.text), str(entry.version), citation_token(entry.citation)
        )
    return table


def print_write(result: MemoryWriteResult, as_json: bool) -> None:
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    console.print(
        f"[green]revision {result.memory_ref.revision}[/] of {escape(result.memory_ref.scope_id)}"
    )
    if result.entries:
        console.print(_entries_table(result.entries, "written"))
    if result.vectors_pending:
        console.print(
            f"[yellow]{result.vectors_pending} entries await embedding: run `powercontext reindex`"
        )


def print_search(page: MemorySearchPage, as_json: bool) -> None:
    if as_json:
        print_json(search_json(page))
        return
    table = Table(
        title=f"{len(page.hits)} hits · {page.mode} · {_ref(page.memory_ref)}",
        title_justify="left",
    )
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("kind", style="cyan", no_wrap=True)
    table.add_column("text", overflow="fold")
    table.add_column("citation", style="dim", overflow="fold")
    for rank, hit in enumerate(page.hits, start=1):
        table.add_row(
            str(rank),
            f"{hit.score:.4f}",
            Text(hit.kind),
            Text(hit.text),
            citation_token(hit.citation),
        )
    console.print(table)


def print_entries(page: MemoryEntriesPage, as_json: bool) -> None:
    if as_json:
        print_json(page.model_dump(mode="json"))
        return
    console.print(
        _entries_table(page.entries, f"{len(page.entries)} entries · {_ref(page.memory_ref)}")
    )
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
        ("active", str(entry.active).lower()),
        ("created_at", entry.created_at.isoformat()),
        ("citation", citation_token(entry.citation)),
    ):
        table.add_row(name, Text(value))
    console.print(table)


def print_error(code: str, message: str) -> None:
    # One line whatever the width, so a log or a grep sees the whole message.
    errors.print(
        f"[red]error[/] [bold]{escape(code)}[/]: {escape(message)}", highlight=False, soft_wrap=True
    )
