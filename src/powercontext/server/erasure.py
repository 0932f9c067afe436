"""The erasure operations' wire models and handlers: forget entries, or a whole scope, for
good (see memory.erasure). Their rows are in `operations.py`.

The actor recorded with each `forget` change is the caller's key fingerprint (`key:<hex>`),
never the key itself; null when auth is off.
"""

from __future__ import annotations

from pydantic import Field

from powercontext.memory.erasure import MAX_FORGET_ENTRIES, ForgetMemoryRequest, ForgetScopeRequest
from powercontext.server import translate
from powercontext.server.calls import Call
from powercontext.server.schemas import (
    EntryIdText,
    ExpectedRevision,
    MemoryRefModel,
    WireIdempotencyKey,
    WireReason,
    WireScopeId,
    _expected_field,
    _idempotency_field,
    _reason_field,
    _scope_field,
    _Wire,
)


class ForgetEntriesRequest(_Wire):
    """Erase every version of the entries: text, metadata, tokens and vectors, at every
    revision. Their citations then answer 410 `erased`; the change log keeps their ids."""

    scope_id: WireScopeId = _scope_field()
    entry_ids: list[EntryIdText] = Field(
        min_length=1,
        max_length=MAX_FORGET_ENTRIES,
        description="The entries to erase (all or none).",
    )
    reason: WireReason | None = _reason_field()
    expected_revision: ExpectedRevision = _expected_field()
    idempotency_key: WireIdempotencyKey | None = _idempotency_field()


class ForgetScopeBody(_Wire):
    """Erase every entry version of the scope; its revisions and tombstones remain."""

    scope_id: WireScopeId = _scope_field()
    reason: WireReason | None = _reason_field()
    expected_revision: ExpectedRevision = _expected_field()
    idempotency_key: WireIdempotencyKey | None = _idempotency_field()


class ForgetResultModel(_Wire):
    memory_ref: MemoryRefModel | None = Field(
        description="The revision the erasure made (the unchanged head when nothing was left)."
    )
    entry_ids: list[str] = Field(description="The entries erased.")
    erased_versions: int = Field(ge=0, description="How many entry versions were erased.")


async def forget_entries(call: Call, body: ForgetEntriesRequest) -> ForgetResultModel:
    """Erase entries for good (text, metadata, tokens, vectors); tombstones remain

    Erase entries (by entry_id) for good: the text, metadata, tokens and vectors of every
    version, at every revision. Cannot be undone. Their citations then answer `erased`; the
    change log keeps their ids and a forget change naming the caller's key.
    """
    request = ForgetMemoryRequest.model_validate(body.model_dump(exclude={"scope_id"}))
    result = await call.memory(body.scope_id).forget(request, actor=call.grant.key_id)
    return translate.to_wire(ForgetResultModel, result)


async def forget_scope(call: Call, body: ForgetScopeBody) -> ForgetResultModel:
    """Erase every entry of a scope for good; revisions and tombstones remain

    Erase every entry of a scope for good (cannot be undone); its revisions and tombstones
    remain and it takes new writes.
    """
    request = ForgetScopeRequest.model_validate(body.model_dump(exclude={"scope_id"}))
    result = await call.memory(body.scope_id).forget_scope(request, actor=call.grant.key_id)
    return translate.to_wire(ForgetResultModel, result)
