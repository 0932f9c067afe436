"""v1 routes of one entry by its id: its version at a revision, and its history."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from powercontext.memory.history import entry_history
from powercontext.server.history import EntryByIdRequest, EntryHistoryModel, HistoryRequest
from powercontext.server.routes import Caller, _json, _operation_id, _responses, scoped_memory
from powercontext.server.schemas import EntryModel

entry_router = APIRouter(
    prefix="/v1/memory/entries", tags=["memory"], generate_unique_id_function=_operation_id
)


@entry_router.post(
    "/by-id",
    response_model=EntryModel,
    responses=_responses(404, 410),
    summary="Get an entry by id, at the head or at a revision",
)
async def get_entry_by_id(body: EntryByIdRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    return _json(await memory.get_entry(body.entry_id, revision=body.revision))


@entry_router.post(
    "/history",
    response_model=EntryHistoryModel,
    responses=_responses(404),
    summary="Every version and change of one entry, newest first, as of a revision",
)
async def entry_history_route(body: HistoryRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    return _json(await entry_history(memory, body.entry_id, body.revision))
