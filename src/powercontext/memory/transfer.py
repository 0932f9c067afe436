"""Export a scope to JSON lines and import it into another, keeping entry ids.

The format is one JSON object per line. The first line is a header naming the format and its
version (a reader refuses versions it does not know), the scope and revision exported and the
entry count (for progress bars). Every further line is one entry active at that revision, in
write order, so threads keep their order and their neighbours when imported:

    {"format": "powercontext.memory.export", "version": 1, "scope_id": "a", "revision": 7, ...}
    {"entry_id": "...", "kind": "fact", "text": "...", "metadata": {}, "thread": null,
     "occurred_at": "2026-01-02T03:04:05Z", "created_at": "...", "version": 2}

`occurred_at` is the entry's event time (as written, else its write time), so an import keeps
every entry's time even though the importing revisions get their own `created_at`. `version`
and `created_at` are informational: an import writes version 1 of a new entry.

An import writes one revision per batch of lines; a failure (a malformed line, an existing
or erased entry id, fewer or more entry lines than the header announced) stops it with the
earlier batches committed and nothing of the failing one. With `on_existing="skip"`
re-running an interrupted import completes it. An entry id erased from the target scope is
never written again: `skip` leaves it out, `fail` and `replace` refuse it.
"""

from __future__ import annotations

import json
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Sequence,
)
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from powercontext.memory.commit import check_batch_size
from powercontext.memory.entries import entry_from_stored, resolve_revision
from powercontext.memory.errors import MemoryValidationError, RevisionConflictError
from powercontext.memory.indexing.threads import WriteIndex, source_of
from powercontext.memory.iso_time import IsoDateTime
from powercontext.memory.models import MemoryRef, MemoryWriteResult
from powercontext.memory.ports import (
    MemoryStore,
    PlannedChange,
    StoredVersion,
    Tombstone,
    TombstoneQuery,
    VersionPage,
)
from powercontext.memory.transfer_index import index_import
from powercontext.memory.transfer_lines import BOM, numbered, parse_line
from powercontext.memory.transfer_lines import MAX_LINE_BYTES as MAX_LINE_BYTES
from powercontext.memory.transfer_lines import split_lines as split_lines
from powercontext.memory.values import (
    MAX_ENTRY_ID_CHARS,
    EntryText,
    Kind,
    Metadata,
    OccurredAt,
    Thread,
)

if TYPE_CHECKING:
    from powercontext.memory.service import MemoryService

FORMAT = "powercontext.memory.export"
FORMAT_VERSION = 1
IMPORT_BATCH_ENTRIES = 1000
"""Entries per import revision: bounds memory and embedding work per commit."""
EXPORT_PAGE_ENTRIES = 500

OnExisting = Literal["skip", "replace", "fail"]
"""What an import does with an entry id the target scope holds already: keep the target's
(`skip`), write the imported one as the entry's next version (`replace`), or stop (`fail`)."""
ImportProgress = Callable[[int, int | None], None]
"""(lines done, entry count announced by the header, if any)."""


def _check_entry_id(value: str) -> str:
    if not value.isprintable() or value != value.strip() or not value:
        raise ValueError("entry_id must be printable, not blank, without surrounding spaces")
    return value


EntryId = Annotated[
    str, Field(min_length=1, max_length=MAX_ENTRY_ID_CHARS), AfterValidator(_check_entry_id)
]


class NewEntry(BaseModel):
    """An entry to write under a caller-chosen id (the unit of an import)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    entry_id: EntryId
    kind: Kind = "fact"
    text: EntryText
    metadata: Metadata = Field(default_factory=dict)
    thread: Thread | None = None
    occurred_at: OccurredAt | None = None


class ExportedEntry(NewEntry):
    """One entry line: a NewEntry plus what the source scope said of it. Its times are the
    file's ISO 8601 text: a number is refused, not read as Unix seconds."""

    created_at: IsoDateTime | None = None
    version: int | None = Field(default=None, ge=1)

    def new_entry(self) -> NewEntry:
        return NewEntry.model_validate(self.model_dump(exclude={"created_at", "version"}))


class ExportHeader(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    format: Literal["powercontext.memory.export"] = "powercontext.memory.export"
    version: int = FORMAT_VERSION
    scope_id: str
    # Bounded like every revision and count the stores keep (64-bit integers).
    revision: int = Field(ge=1, le=2**63 - 1)
    entry_count: int = Field(ge=0, le=2**63 - 1)
    exported_at: IsoDateTime


class ImportResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_ref: MemoryRef | None
    """The target scope's head after the import (None: nothing was written to an empty one)."""
    source: ExportHeader
    added: int = 0
    replaced: int = 0
    skipped: int = 0
    revisions: int = 0


# ---- export ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScopeExport:
    """A scope's export at one revision: the header is known before any entry line is read,
    so a transport can refuse an unknown scope before it starts streaming."""

    service: MemoryService
    header: ExportHeader

    async def lines(self) -> AsyncGenerator[str, None]:
        """The header and every entry line, each ending with a newline."""
        yield self.header.model_dump_json() + "\n"
        async for version in self._versions():
            entry = entry_from_stored(self.header.scope_id, self.header.revision, version)
            line = ExportedEntry(
                entry_id=entry.entry_id,
                kind=entry.kind,
                text=entry.text,
                metadata=entry.metadata,
                thread=entry.thread,
                occurred_at=entry.occurred_at,
                created_at=entry.created_at,
                version=entry.version,
            )
            yield line.model_dump_json() + "\n"

    async def _versions(self) -> AsyncIterator[StoredVersion]:
        after: int | None = None
        while True:
            page = await self.service.store.list_versions(
                VersionPage(
                    self.header.scope_id,
                    self.header.revision,
                    after_key=after,
                    limit=EXPORT_PAGE_ENTRIES,
                )
            )
            for version in page:
                yield version
            if len(page) < EXPORT_PAGE_ENTRIES:
                return
            after = page[-1].key


async def open_export(
    service: MemoryService, scope_id: str, revision: int | None = None
) -> ScopeExport:
    """NotFoundError when the scope has no revision (or not `revision`)."""
    at = await resolve_revision(service.store, scope_id, revision)
    header = ExportHeader(
        scope_id=scope_id,
        revision=at,
        entry_count=await service.store.active_count(scope_id, at),
        exported_at=datetime.now(UTC),
    )
    return ScopeExport(service, header)


# ---- import ----------------------------------------------------------------------------


class _NothingToWrite(Exception):
    """Every entry of a batch was skipped: no revision is made."""


@dataclass(slots=True)
class EntryCounts:
    """What one import or add_entries did with its entries."""

    added: int = 0
    replaced: int = 0
    skipped: int = 0


async def add_entries(
    service: MemoryService,
    scope_id: str,
    entries: Sequence[NewEntry],
    on_existing: OnExisting = "fail",
) -> tuple[MemoryWriteResult | None, EntryCounts]:
    """Write `entries` under their own ids in one revision (None when all were skipped)."""
    if not entries:
        raise MemoryValidationError("add_entries needs at least one entry")
    check_batch_size(len(entries), service.config.max_batch_entries)
    ids = [e.entry_id for e in entries]
    if len(set(ids)) != len(ids):
        raise MemoryValidationError("one batch names the same entry_id twice")
    counts = EntryCounts()
    planned: list[WriteIndex] = []
    replaced: list[StoredVersion] = []

    async def plan() -> list[PlannedChange]:
        heads = await service.store.entry_heads(scope_id, ids)
        erased = await _erased(service.store, scope_id, [i for i in ids if i not in heads])
        if erased and on_existing != "skip":
            first = erased[min(erased, key=ids.index)]
            raise RevisionConflictError(
                f"entry {first.entry_id!r} was erased from scope {scope_id!r} at revision "
                f"{first.erased_revision}, and an erased entry is never written again "
                f"(on_existing={on_existing!r}; 'skip' leaves it out)",
                expected=None,
                actual=None,
            )
        if heads and on_existing == "fail":
            raise RevisionConflictError(
                f"{len(heads)} entries exist in scope {scope_id!r} already, e.g. "
                f"{sorted(heads)[0]!r} (on_existing='fail'; 'skip' leaves them out, 'replace' "
                "writes the file's version over them)",
                expected=None,
                actual=None,
            )
        kept = [
            e
            for e in entries
            if e.entry_id not in erased and (on_existing == "replace" or e.entry_id not in heads)
        ]
        counts.skipped = len(entries) - len(kept)
        counts.replaced = sum(1 for e in kept if e.entry_id in heads)
        counts.added = len(kept) - counts.replaced
        if not kept:
            raise _NothingToWrite
        replaced[:] = [
            heads[e.entry_id]
            for e in kept
            if e.entry_id in heads and heads[e.entry_id].removed_revision is None
        ]
        index, tokens = await index_import(service, scope_id, kept, heads)
        planned[:] = [index]
        return [
            _change(service, entry, heads.get(entry.entry_id), entry_tokens)
            for entry, entry_tokens in zip(kept, tokens, strict=True)
        ]

    try:
        # `removed`: the replaced versions' former neighbours are re-derived after the commit.
        result = await service.write_planned(
            scope_id, None, plan, None, lambda: planned[0], lambda: replaced
        )
    except _NothingToWrite:
        return None, counts
    return result, counts


async def _erased(store: MemoryStore, scope_id: str, ids: Sequence[str]) -> dict[str, Tombstone]:
    """The tombstone of each of `ids` erased from the scope: an id with no stored version may
    be one whose every version was erased, which a lookup must keep answering as erased."""
    erased: dict[str, Tombstone] = {}
    for start in range(0, len(ids), IMPORT_BATCH_ENTRIES):  # bounded SQL parameter lists
        part = tuple(ids[start : start + IMPORT_BATCH_ENTRIES])
        for stone in await store.tombstones(TombstoneQuery(scope_id, entry_ids=part)):
            erased[stone.entry_id] = stone  # oldest first: an entry's last erasure wins
    return erased


def _change(
    service: MemoryService, entry: NewEntry, head: StoredVersion | None, tokens: str | None
) -> PlannedChange:
    source = source_of(entry)
    if head is None:
        new = service.new_version(entry.entry_id, 1, source, tokens=tokens)
        return PlannedChange(op="add", new=new, reason="import")
    new = service.new_version(entry.entry_id, head.version + 1, source, tokens=tokens)
    if head.removed_revision is None:
        return PlannedChange(
            op="revise", new=new, previous_entry_version_id=head.entry_version_id, reason="import"
        )
    return PlannedChange(op="reactivate", new=new, reason="import")


def parse_header(line: str) -> ExportHeader:
    line = line.removeprefix(BOM)
    try:
        raw = json.loads(line)
    except ValueError as exc:
        raise MemoryValidationError(f"line 1: not JSON ({exc})") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise MemoryValidationError(f"line 1 must be a {FORMAT!r} header")
    version = raw.get("version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise MemoryValidationError(
            f"line 1: export format version {version!r} is not supported "
            f"(this release reads version {FORMAT_VERSION})"
        )
    return parse_line(line, 1, ExportHeader)


async def import_lines(
    service: MemoryService,
    scope_id: str,
    lines: AsyncIterable[str] | Iterable[str],
    *,
    on_existing: OnExisting = "fail",
    batch_entries: int | None = None,
    progress: ImportProgress | None = None,
) -> ImportResult:
    """Read an export (header first) and write its entries into `scope_id`, one revision per
    `batch_entries` lines (default IMPORT_BATCH_ENTRIES, at most the deployment's batch bound).
    Lines are read as they arrive: a stream is never held whole."""
    if batch_entries is None:
        batch_entries = min(IMPORT_BATCH_ENTRIES, service.config.max_batch_entries)
    if not 1 <= batch_entries <= service.config.max_batch_entries:
        raise MemoryValidationError(f"batch_entries must be 1..{service.config.max_batch_entries}")
    header: ExportHeader | None = None
    batch: list[NewEntry] = []
    done = 0
    totals = EntryCounts()
    revisions = 0
    result: MemoryWriteResult | None = None

    async def flush() -> None:
        nonlocal done, revisions, result
        written, counts = await add_entries(service, scope_id, batch, on_existing)
        totals.added += counts.added
        totals.replaced += counts.replaced
        totals.skipped += counts.skipped
        if written is not None:
            revisions += 1
            result = written
        done += len(batch)
        batch.clear()
        if progress is not None:
            progress(done, header.entry_count if header else None)

    async for number, line in numbered(lines):
        if not line.strip():
            continue
        if header is None:
            header = parse_header(line)
            continue
        if done + len(batch) >= header.entry_count:
            raise MemoryValidationError(
                f"line {number}: the header announced {header.entry_count} entries, and this "
                "line is one more (two exports joined? an edited file must set the header's "
                "entry_count to the entry lines it holds)"
            )
        batch.append(parse_line(line, number, ExportedEntry).new_entry())
        if len(batch) >= batch_entries:
            await flush()
    if header is None:
        raise MemoryValidationError(f"an import needs a {FORMAT!r} header line")
    if done + len(batch) < header.entry_count:
        # Checked before the last batch is written: a cut-off copy of a small export
        # writes nothing at all, rather than part of the scope as if it were whole.
        raise MemoryValidationError(
            f"the export ends after {done + len(batch)} of the {header.entry_count} entries "
            "its header announced: the file is truncated (an edited file must set the "
            "header's entry_count to the entry lines it holds)"
        )
    if batch:
        await flush()
    ref = result.memory_ref if result is not None else await service.head(scope_id)
    return ImportResult(
        memory_ref=ref,
        source=header,
        added=totals.added,
        replaced=totals.replaced,
        skipped=totals.skipped,
        revisions=revisions,
    )
