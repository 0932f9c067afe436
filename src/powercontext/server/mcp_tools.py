"""The MCP tools: each one is an HTTP v1 memory operation with the same wire models.

Each tool's input schema is its v1 request model's JSON schema and its output schema is the
v1 response model's (server/schemas.py), so the two surfaces cannot drift apart. The same
tuple serves both transports: streamable HTTP at `/mcp` and stdio (`powercontext mcp`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.types import Tool, ToolAnnotations
from pydantic import BaseModel

from powercontext.memory.errors import NotFoundError
from powercontext.memory.history import entry_history
from powercontext.memory.models import (
    MemoryCitation,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
)
from powercontext.memory.scoped import ScopedMemory
from powercontext.runtime import Runtime
from powercontext.server.auth import KeyGrant
from powercontext.server.forget_routes import (
    ForgetEntriesRequest,
    ForgetResultModel,
    ForgetScopeBody,
    forget_of,
    forget_scope_of,
)
from powercontext.server.history import EntryByIdRequest, EntryHistoryModel, HistoryRequest
from powercontext.server.routes import (
    batch_search_response,
    run_batch_search,
    search_request,
    search_response,
)
from powercontext.server.schemas import (
    BatchSearchRequest,
    BatchSearchResponse,
    ChangesPageModel,
    ChangesRequest,
    CitationModel,
    EntriesPageModel,
    EntryModel,
    GetEntryRequest,
    HeadRequest,
    HeadResponse,
    ListEntriesRequest,
    ReactivateEntryRequest,
    RememberBatchRequest,
    RememberOneRequest,
    RetireEntryRequest,
    ReviseEntryRequest,
    SearchRequest,
    SearchResponse,
    WriteResultModel,
)
from powercontext.server.scope_routes import ListScopesRequest, ScopesResponse, scopes_of

INSTRUCTIONS = (
    "PowerContext is durable, revisioned memory. Every tool names a `scope_id` (a tenant, "
    "project or agent); the API key must be allowed that scope. Search returns hits with "
    "citations; pass a citation to get_entry to read that exact version, to revise_entry to "
    "write a new version, or to retire_entry / reactivate_entry. entry_history and "
    "list_changes show what changed and when."
)

Handler = Callable[[ScopedMemory, Any], Awaitable[BaseModel]]
KeyHandler = Callable[[Runtime, KeyGrant], Awaitable[BaseModel]]
"""A tool that names no scope: what it answers is decided by the caller's key alone."""


GrantHandler = Callable[[ScopedMemory, Any, KeyGrant], Awaitable[BaseModel]]
"""A scoped tool that also records who called it (an erasure's actor)."""


class ScopedBody(Protocol):
    scope_id: str


@dataclass(frozen=True, slots=True)
class MemoryTool:
    """One MCP tool: the v1 request model it accepts and the v1 response model it returns."""

    name: str
    description: str
    request: type[BaseModel]
    response: type[BaseModel]
    handler: Handler | KeyHandler | GrantHandler
    annotations: ToolAnnotations
    scoped: bool = True
    """True: `handler` is a Handler for the body's scope_id (checked against the key's grant);
    False: a KeyHandler, given the runtime and the grant itself."""
    with_grant: bool = False
    """A scoped tool whose handler is a GrantHandler: it is also given the caller's grant."""

    def describe(self) -> Tool:
        return Tool(
            name=self.name,
            title=self.annotations.title,
            description=self.description,
            input_schema=self.request.model_json_schema(mode="validation"),
            output_schema=self.response.model_json_schema(mode="serialization"),
            annotations=self.annotations,
        )


def _citation(model: CitationModel) -> MemoryCitation:
    return MemoryCitation.model_validate(model.model_dump())


def _written(result: BaseModel) -> BaseModel:
    return WriteResultModel.model_validate(result.model_dump())


async def _remember(memory: ScopedMemory, body: RememberOneRequest) -> BaseModel:
    one = RememberMemoryRequest.model_validate(body.model_dump(exclude={"scope_id"}))
    return _written(await memory.remember(one))


async def _remember_batch(memory: ScopedMemory, body: RememberBatchRequest) -> BaseModel:
    batch = [
        RememberMemoryRequest.model_validate(
            entry.model_dump()
            | {"expected_revision": body.expected_revision, "idempotency_key": body.idempotency_key}
        )
        for entry in body.entries
    ]
    return _written(await memory.remember_many(batch))


async def _search(memory: ScopedMemory, body: SearchRequest) -> BaseModel:
    page = await memory.search(search_request(body))
    return search_response(page)


async def _search_batch(memory: ScopedMemory, body: BatchSearchRequest) -> BaseModel:
    return batch_search_response(await run_batch_search(memory, body), body.include_rerank)


async def _list(memory: ScopedMemory, body: ListEntriesRequest) -> BaseModel:
    page = await memory.list(
        revision=body.revision, cursor=body.cursor, limit=body.limit, where=body.filter
    )
    return EntriesPageModel.model_validate(page.model_dump())


async def _get(memory: ScopedMemory, body: GetEntryRequest) -> BaseModel:
    entry = await memory.get(_citation(body.citation))
    if entry is None:
        raise NotFoundError("the citation names no entry version in this scope")
    return EntryModel.model_validate(entry.model_dump())


async def _revise(memory: ScopedMemory, body: ReviseEntryRequest) -> BaseModel:
    fields = body.model_dump(exclude={"scope_id", "citation"})
    revised = ReviseMemoryRequest.model_validate(fields | {"citation": _citation(body.citation)})
    return _written(await memory.revise(revised))


def _state_change(body: RetireEntryRequest) -> dict[str, Any]:
    """What retire and reactivate both take (ReactivateEntryRequest extends the retire body)."""
    return {
        "citation": _citation(body.citation),
        "reason": body.reason,
        "expected_revision": body.expected_revision,
        "idempotency_key": body.idempotency_key,
    }


async def _retire(memory: ScopedMemory, body: RetireEntryRequest) -> BaseModel:
    return _written(await memory.retire(RetireMemoryRequest(**_state_change(body))))


async def _reactivate(memory: ScopedMemory, body: ReactivateEntryRequest) -> BaseModel:
    return _written(await memory.reactivate(ReactivateMemoryRequest(**_state_change(body))))


async def _changes(memory: ScopedMemory, body: ChangesRequest) -> BaseModel:
    page = await memory.changes(body.since_revision, limit=body.limit)
    return ChangesPageModel.model_validate(page.model_dump())


async def _head(memory: ScopedMemory, body: HeadRequest) -> BaseModel:
    ref = await memory.head()
    return HeadResponse.model_validate({"memory_ref": ref.model_dump() if ref else None})


async def _history(memory: ScopedMemory, body: HistoryRequest) -> BaseModel:
    found = await entry_history(memory, body.entry_id, body.revision)
    return EntryHistoryModel.model_validate(found.model_dump())


async def _get_by_id(memory: ScopedMemory, body: EntryByIdRequest) -> BaseModel:
    entry = await memory.get_entry(body.entry_id, revision=body.revision)
    return EntryModel.model_validate(entry.model_dump())


async def _forget(memory: ScopedMemory, body: ForgetEntriesRequest, caller: KeyGrant) -> BaseModel:
    return ForgetResultModel.model_validate((await forget_of(memory, caller, body)).model_dump())


async def _forget_scope(memory: ScopedMemory, body: ForgetScopeBody, caller: KeyGrant) -> BaseModel:
    result = await forget_scope_of(memory, caller, body)
    return ForgetResultModel.model_validate(result.model_dump())


async def _list_scopes(runtime: Runtime, caller: KeyGrant) -> BaseModel:
    return await scopes_of(runtime, caller)


def _annotations(
    title: str, *, read_only: bool, destructive: bool = False, idempotent: bool | None = None
) -> ToolAnnotations:
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=read_only if idempotent is None else idempotent,
        open_world_hint=False,
    )


MEMORY_TOOLS: tuple[MemoryTool, ...] = (
    MemoryTool(
        "remember",
        "Remember one entry (text; optional kind, metadata, thread and occurred_at) in a scope; "
        "creates one revision and returns the citations of the version written.",
        RememberOneRequest,
        WriteResultModel,
        _remember,
        _annotations("Remember", read_only=False),
    ),
    MemoryTool(
        "remember_batch",
        "Remember several entries in one revision (all or none); returns their citations.",
        RememberBatchRequest,
        WriteResultModel,
        _remember_batch,
        _annotations("Remember a batch", read_only=False),
    ),
    MemoryTool(
        "search",
        "Search a scope's memory at its head revision; returns the final hits, best first, "
        "each with a citation.",
        SearchRequest,
        SearchResponse,
        _search,
        _annotations("Search memory", read_only=True),
    ),
    MemoryTool(
        "search_batch",
        "Run several searches of one scope in one call (for example the sub-queries of one "
        "question); every page answers at the same revision, in request order.",
        BatchSearchRequest,
        BatchSearchResponse,
        _search_batch,
        _annotations("Search memory in a batch", read_only=True),
    ),
    MemoryTool(
        "list_entries",
        "Page through the entries active at a revision (default the head), oldest first.",
        ListEntriesRequest,
        EntriesPageModel,
        _list,
        _annotations("List entries", read_only=True),
    ),
    MemoryTool(
        "get_entry",
        "Resolve a citation (from search, list or a write) to its exact entry version.",
        GetEntryRequest,
        EntryModel,
        _get,
        _annotations("Get entry", read_only=True),
    ),
    MemoryTool(
        "revise_entry",
        "Write a new version of the entry a citation names (new text, optionally kind and "
        "metadata); the old version stays citable.",
        ReviseEntryRequest,
        WriteResultModel,
        _revise,
        _annotations("Revise entry", read_only=False),
    ),
    MemoryTool(
        "retire_entry",
        "Retire (soft-delete) the entry a citation names: later revisions no longer find it; "
        "its citations still resolve.",
        RetireEntryRequest,
        WriteResultModel,
        _retire,
        _annotations("Retire entry", read_only=False, destructive=True),
    ),
    MemoryTool(
        "reactivate_entry",
        "Make a retired entry active again: search finds it from the new revision on.",
        ReactivateEntryRequest,
        WriteResultModel,
        _reactivate,
        _annotations("Reactivate entry", read_only=False),
    ),
    MemoryTool(
        "forget_entry",
        "Erase entries (by entry_id) for good: the text, metadata, tokens and vectors of every "
        "version, at every revision. Cannot be undone. Their citations then answer `erased`; "
        "the change log keeps their ids and a forget change naming the caller's key.",
        ForgetEntriesRequest,
        ForgetResultModel,
        _forget,
        _annotations("Forget entries", read_only=False, destructive=True),
        with_grant=True,
    ),
    MemoryTool(
        "forget_scope",
        "Erase every entry of a scope for good (cannot be undone); its revisions and "
        "tombstones remain and it takes new writes.",
        ForgetScopeBody,
        ForgetResultModel,
        _forget_scope,
        _annotations("Forget scope", read_only=False, destructive=True),
        with_grant=True,
    ),
    MemoryTool(
        "entry_history",
        "Every version of one entry (by entry_id) and every change that touched it, newest "
        "first, as of a revision (default the head), with the version active then.",
        HistoryRequest,
        EntryHistoryModel,
        _history,
        _annotations("Entry history", read_only=True),
    ),
    MemoryTool(
        "get_entry_by_id",
        "The version of one entry (by entry_id) active at a revision (default the head); "
        "not found when the entry is retired then.",
        EntryByIdRequest,
        EntryModel,
        _get_by_id,
        _annotations("Get entry by id", read_only=True),
    ),
    MemoryTool(
        "list_changes",
        "The scope's change log after a revision, oldest first: what each revision added, "
        "revised, retired or reactivated.",
        ChangesRequest,
        ChangesPageModel,
        _changes,
        _annotations("List changes", read_only=True),
    ),
    MemoryTool(
        "head",
        "The scope's head revision (null for an empty scope).",
        HeadRequest,
        HeadResponse,
        _head,
        _annotations("Head revision", read_only=True),
    ),
    MemoryTool(
        "list_scopes",
        "The scopes this key may use that hold at least one revision, with each one's head "
        "revision and active entry count (the same list as GET /v1/scopes).",
        ListScopesRequest,
        ScopesResponse,
        _list_scopes,
        _annotations("List scopes", read_only=True),
        scoped=False,
    ),
)
