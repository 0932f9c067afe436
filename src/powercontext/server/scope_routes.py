"""v1 route listing the scopes the caller's key may use."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import Field

from powercontext.runtime import Runtime
from powercontext.server.auth import KeyGrant
from powercontext.server.routes import Caller, _json, _operation_id, _responses, state_of
from powercontext.server.schemas import MemoryRefModel, _Wire

scope_router = APIRouter(prefix="/v1", tags=["memory"], generate_unique_id_function=_operation_id)


class ScopeSummaryModel(_Wire):
    scope_id: str = Field(description="The scope.")
    memory_ref: MemoryRefModel = Field(description="Its head revision.")
    entry_count: int = Field(ge=0, description="Entries active at the head.")


class ScopesResponse(_Wire):
    scopes: list[ScopeSummaryModel] = Field(
        description="Every scope with at least one revision that the key may use, by scope_id."
    )


@scope_router.get(
    "/scopes",
    response_model=ScopesResponse,
    responses=_responses(),
    summary="List the scopes this key may use, with head revision and entry count",
)
async def list_scopes(caller: Caller, request: Request) -> Response:
    runtime = state_of(request).runtime
    assert runtime is not None, "the lifespan opens the runtime before serving"
    return _json(await scopes_of(runtime, caller))


class ListScopesRequest(_Wire):
    """No arguments: the key alone decides which scopes are listed."""


async def scopes_of(runtime: Runtime, caller: KeyGrant) -> ScopesResponse:
    """The scopes `caller` may use (GET /v1/scopes and the MCP tool `list_scopes`)."""
    found = await runtime.memory.scopes(caller.allows)
    return ScopesResponse.model_validate({"scopes": [s.model_dump() for s in found]})
