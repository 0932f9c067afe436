"""One entry by id and its history: requests and responses (v1 routes, inspector, MCP)."""

from __future__ import annotations

from pydantic import Field

from powercontext.server.schemas import (
    AsOfRevision,
    ChangeModel,
    EntryIdText,
    EntryModel,
    MemoryRefModel,
    WireScopeId,
    _Wire,
)

_REVISION = "Read as of this revision (default the head); 404 when the scope has not reached it."


class _EntryAtRevision(_Wire):
    """One entry of a scope, as of a revision: what the history and by-id requests name."""

    scope_id: WireScopeId = Field(description="The scope.")
    entry_id: EntryIdText = Field(description="The entry (from any citation).")
    revision: AsOfRevision = Field(default=None, description=_REVISION)


class HistoryRequest(_EntryAtRevision):
    """Every version of one entry and every change that touched it, newest first."""


class EntryByIdRequest(_EntryAtRevision):
    """The version of one entry active at a revision (404 when none is active then)."""


class EntryVersionModel(_Wire):
    entry: EntryModel = Field(description="The version, cited at the history's revision.")
    written_by: ChangeModel = Field(description="The change that wrote it.")


class EntryHistoryModel(_Wire):
    memory_ref: MemoryRefModel = Field(description="The revision the history is read at.")
    entry_id: str = Field(description="The entry.")
    changes: list[ChangeModel] = Field(description="Every change of the entry, newest first.")
    versions: list[EntryVersionModel] = Field(description="Every version, newest first.")
    active_version: EntryModel | None = Field(
        default=None, description="The version active at `memory_ref`; null when retired."
    )
    complete: bool = Field(
        description="False when the change log was too long to read whole (history cut)."
    )
