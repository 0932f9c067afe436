"""v1 erasure routes: forget entries, or a whole scope, for good (see memory.erasure).

The actor recorded with each `forget` change is the caller's key fingerprint (`key:<hex>`),
never the key itself; null when auth is off.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import Field

from powercontext.memory.erasure import (
    MAX_FORGET_ENTRIES,
    ForgetMemoryRequest,
    ForgetScopeRequest,
    MemoryForgetResult,
)
from powercontext.memory.scoped import ScopedMemory
from powercontext.server.auth import KeyGrant
from powercontext.server.routes import Caller, _json, _operation_id, _responses, scoped_memory
from powercontext.server.schemas import (
    MemoryRefModel,
    WireReason,
    WireScopeId,
    _expected_field,
    _reason_field,
    _scope_field,
    _Wire,
)

forget_router = APIRouter(prefix="/v1", tags=["memory"], generate_unique_id_function=_operation_id)


class ForgetEntriesRequest(_Wire):
    """Erase every version of the entries: text, metadata, tokens and vectors, at every
    revision. Their citations then answer 410 `erased`; the change log keeps their ids."""

    scope_id: WireScopeId = _scope_field()
    entry_ids: list[str] = Field(
        min_length=1,
        max_length=MAX_FORGET_ENTRIES,
        description="The entries to erase (all or none).",
    )
    reason: WireReason | None = _reason_field()
    expected_revision: int | None = _expected_field()


class ForgetScopeBody(_Wire):
    """Erase every entry version of the scope; its revisions and tombstones remain."""

    scope_id: WireScopeId = _scope_field()
    reason: WireReason | None = _reason_field()
    expected_revision: int | None = _expected_field()


class ForgetResultModel(_Wire):
    memory_ref: MemoryRefModel | None = Field(
        description="The revision the erasure made (the unchanged head when nothing was left)."
    )
    entry_ids: list[str] = Field(description="The entries erased.")
    erased_versions: int = Field(ge=0, description="How many entry versions were erased.")


@forget_router.post(
    "/memory/forget",
    response_model=ForgetResultModel,
    responses=_responses(404, 409, 410),
    summary="Erase entries for good (text, metadata, tokens, vectors); tombstones remain",
)
async def forget_entries(body: ForgetEntriesRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    return _json(await forget_of(memory, caller, body))


@forget_router.post(
    "/scopes/forget",
    response_model=ForgetResultModel,
    responses=_responses(404, 409),
    summary="Erase every entry of a scope for good; revisions and tombstones remain",
)
async def forget_scope(body: ForgetScopeBody, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    return _json(await forget_scope_of(memory, caller, body))


async def forget_of(
    memory: ScopedMemory, caller: KeyGrant, body: ForgetEntriesRequest
) -> MemoryForgetResult:
    """POST /v1/memory/forget and the MCP tool `forget_entry`."""
    fields = body.model_dump(exclude={"scope_id"})
    return await memory.forget(ForgetMemoryRequest.model_validate(fields), actor=caller.key_id)


async def forget_scope_of(
    memory: ScopedMemory, caller: KeyGrant, body: ForgetScopeBody
) -> MemoryForgetResult:
    """POST /v1/scopes/forget and the MCP tool `forget_scope`."""
    fields = body.model_dump(exclude={"scope_id"})
    return await memory.forget_scope(ForgetScopeRequest.model_validate(fields), actor=caller.key_id)
