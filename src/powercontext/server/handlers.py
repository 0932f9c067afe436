"""The handler of every operation: `async def name(call: Call, body: Request) -> Response`.

A handler's docstring documents its operation (`operations._one_tool`): the first line is the
HTTP route's summary, the rest its MCP tool's description, written for the model that picks
the tool.

A handler sees only wire models and the caller's `Call`; how the body arrived (HTTP v1, an
MCP tool, the inspector) is not its concern. Wire and runtime models meet in `translate`.
"""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.memory.errors import NotFoundError, citation_not_found
from powercontext.memory.history import entry_history as read_entry_history
from powercontext.memory.models import MemorySearchPage
from powercontext.server import translate
from powercontext.server.calls import Call
from powercontext.server.history import EntryByIdRequest, EntryHistoryModel, HistoryRequest
from powercontext.server.schemas import (
    ChangesPageModel,
    ChangesRequest,
    EntriesPageModel,
    EntryModel,
    GetEntryRequest,
    HeadRequest,
    HeadResponse,
    ListEntriesRequest,
    ReactivateEntryRequest,
    RememberOneRequest,
    RememberRequest,
    RetireEntryRequest,
    ReviseEntryRequest,
    WriteResultModel,
)
from powercontext.server.scopes import ListScopesRequest, ScopesResponse
from powercontext.server.search_schemas import (
    BatchSearchRequest,
    BatchSearchResponse,
    SearchRequest,
    SearchResponse,
)


async def remember(call: Call, body: RememberRequest) -> WriteResultModel:
    memory = call.memory(body.scope_id)
    if isinstance(body, RememberOneRequest):
        written = await memory.remember(translate.remember_one(body))
    else:
        written = await memory.remember_many(translate.remember_batch(body))
    return translate.to_wire(WriteResultModel, written)


def _observe_statuses(call: Call, pages: Sequence[MemorySearchPage]) -> bool:
    """Count each page's rerank status; True when the deployment always reports it.

    A fail-open deployment always reports the status: a degraded page must be told apart
    from a reranked one even by a client that never asks for the trace. Otherwise the keys
    are absent (SearchResponse omits them), so a client that does not ask sees no change.
    """
    for page in pages:
        assert page.rerank_status is not None, "the runtime always reports a status"
        call.state.metrics.observe_rerank_status(page.rerank_status)
    return call.runtime.settings.runtime.memory_rerank_failure_policy == "fail_open"


async def search(call: Call, body: SearchRequest) -> SearchResponse:
    """Search a scope: final hits, and a redacted rerank trace on request

    Search a scope's memory at its head revision (or as of `revision`); returns the final
    hits, best first, each with a citation.
    """
    page = await call.memory(body.scope_id).search(translate.search_request(body))
    report_status = _observe_statuses(call, [page])
    return translate.search_response(page, body.include_rerank, report_status=report_status)


async def search_batch(call: Call, body: BatchSearchRequest) -> BatchSearchResponse:
    """Several searches at one exact revision: one page per search, in order

    Run several searches of one scope in one call (for example the sub-queries of one
    question); every page answers at the same revision, in request order.
    """
    memory = call.memory(body.scope_id)
    pages = await memory.search_batch(translate.batch_search_requests(body))
    report_status = _observe_statuses(call, pages)
    return translate.batch_search_response(pages, body.include_rerank, report_status=report_status)


async def list_entries(call: Call, body: ListEntriesRequest) -> EntriesPageModel:
    """List

    Page through the entries active at a revision (default the head), oldest first.
    """
    page = await call.memory(body.scope_id).list(
        revision=body.revision, cursor=body.cursor, limit=body.limit, where=body.filter
    )
    return translate.to_wire(EntriesPageModel, page)


async def get_entry(call: Call, body: GetEntryRequest) -> EntryModel:
    """Get a citation

    Resolve a citation (from search, list or a write) to its exact entry version.
    """
    entry = await call.memory(body.scope_id).get(translate.citation(body.citation))
    if entry is None:
        raise NotFoundError(citation_not_found(body.scope_id, body.citation.memory_ref.scope_id))
    return translate.to_wire(EntryModel, entry)


async def revise_entry(call: Call, body: ReviseEntryRequest) -> WriteResultModel:
    """Revise an entry

    Write a new version of the entry a citation names (new text, optionally kind and
    metadata); the old version stays citable.
    """
    written = await call.memory(body.scope_id).revise(translate.revise_request(body))
    return translate.to_wire(WriteResultModel, written)


async def retire_entry(call: Call, body: RetireEntryRequest) -> WriteResultModel:
    """Retire an entry

    Retire (soft-delete) the entry a citation names: later revisions no longer find it;
    its citations still resolve.
    """
    written = await call.memory(body.scope_id).retire(translate.retire_request(body))
    return translate.to_wire(WriteResultModel, written)


async def reactivate_entry(call: Call, body: ReactivateEntryRequest) -> WriteResultModel:
    """Reactivate a retired entry

    Make a retired entry active again: search finds it from the new revision on.
    """
    written = await call.memory(body.scope_id).reactivate(translate.reactivate_request(body))
    return translate.to_wire(WriteResultModel, written)


async def list_changes(call: Call, body: ChangesRequest) -> ChangesPageModel:
    """Change log

    The scope's change log after a revision, oldest first: what each revision added,
    revised, retired or reactivated.
    """
    page = await call.memory(body.scope_id).changes(body.since_revision, limit=body.limit)
    return translate.to_wire(ChangesPageModel, page)


async def head(call: Call, body: HeadRequest) -> HeadResponse:
    """Head revision

    The scope's head revision (null for an empty scope).
    """
    return translate.head_response(await call.memory(body.scope_id).head())


async def get_entry_by_id(call: Call, body: EntryByIdRequest) -> EntryModel:
    """Get an entry by id, at the head or at a revision

    The version of one entry (by entry_id) active at a revision (default the head); not
    found when the entry is retired then.
    """
    memory = call.memory(body.scope_id)
    entry = await memory.get_entry(body.entry_id, revision=body.revision)
    return translate.to_wire(EntryModel, entry)


async def entry_history(call: Call, body: HistoryRequest) -> EntryHistoryModel:
    """Every version and change of one entry, newest first, as of a revision

    Every version of one entry (by entry_id) and every change that touched it, newest
    first, as of a revision (default the head), with the version active then.
    """
    found = await read_entry_history(call.memory(body.scope_id), body.entry_id, body.revision)
    return translate.to_wire(EntryHistoryModel, found)


async def list_scopes(call: Call, body: ListScopesRequest) -> ScopesResponse:
    """List the scopes this key may use, with head revision and entry count

    The scopes this key may use that hold at least one revision, with each one's head
    revision and active entry count (the same list as GET /v1/scopes).
    """
    # The grant alone decides: no scope is named.
    found = await call.runtime.memory.scopes(call.grant.allows)
    return ScopesResponse.model_validate({"scopes": [s.model_dump() for s in found]})
