"""Contract: NUL (U+0000) gets one answer from every backend.

PostgreSQL's text cannot hold NUL and its jsonb rejects the `\\u0000` escape, while SQLite
keeps both, and the API refuses NUL in every string (docs/http.md). So a write whose strings
(text, ids, kind, thread, reason, metadata keys and values, an erasure's actor and reason)
hold NUL is a validation error that writes nothing, and a read by an id holding NUL finds
nothing, on every backend. Before, SQLite stored what PostgreSQL failed on with a storage
error, and PostgreSQL stored NUL metadata that then broke every metadata filter of its scope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.ports import (
    CommitRequest,
    ErasureRequest,
    MemoryStore,
    PlannedChange,
    TombstoneQuery,
)
from powercontext.memory.service import MemoryService

from .builders import add, retire

SCOPE = "nul"
NUL = "a\x00b"

_BAD_PLANS: dict[str, Callable[[], PlannedChange]] = {
    "metadata value": lambda: add("plain text", metadata={"k": NUL}),
    "nested metadata value": lambda: add("plain text", metadata={"k": [{"deep": NUL}]}),
    "metadata key": lambda: add("plain text", metadata={NUL: 1}),
    "reason": lambda: add("plain text", reason=NUL),
    "text": lambda: add(NUL, tokens="a b"),
    "kind": lambda: add("plain text", kind=NUL),
    "thread": lambda: add("plain text", thread=NUL),
    "entry_id": lambda: add("plain text", entry_id=NUL),
}


@pytest.mark.parametrize("field", sorted(_BAD_PLANS))
async def test_a_commit_holding_nul_is_refused_and_writes_nothing(
    store: MemoryStore, field: str
) -> None:
    first = await store.commit(CommitRequest(SCOPE, None, [add("kept entry")]))
    with pytest.raises(MemoryValidationError, match="NUL"):
        await store.commit(CommitRequest(SCOPE, first.revision, [_BAD_PLANS[field]()]))
    assert await store.head(SCOPE) == first.revision


async def test_a_retire_reason_holding_nul_is_refused(store: MemoryStore) -> None:
    first = await store.commit(CommitRequest(SCOPE, None, [add("kept entry")]))
    kept = await store.fetch_versions(SCOPE, first.keys)
    with pytest.raises(MemoryValidationError, match="NUL"):
        await store.commit(CommitRequest(SCOPE, 1, [retire(kept[first.keys[0]], reason=NUL)]))
    assert await store.head(SCOPE) == 1


@pytest.mark.parametrize("field", ["actor", "reason"])
async def test_an_erasure_recording_nul_is_refused_and_erases_nothing(
    store: MemoryStore, field: str
) -> None:
    first = await store.commit(CommitRequest(SCOPE, None, [add("kept entry")]))
    entry = (await store.fetch_versions(SCOPE, first.keys))[first.keys[0]]
    said: dict[str, Any] = {"actor": "ops", "reason": "asked", field: NUL}
    with pytest.raises(MemoryValidationError, match="NUL"):
        await store.erase(ErasureRequest(SCOPE, 1, [entry.entry_id], **said))
    assert await store.head(SCOPE) == 1
    assert await store.get_version(SCOPE, entry.entry_version_id) == entry


async def test_a_lookup_by_an_id_holding_nul_finds_nothing(store: MemoryStore) -> None:
    await store.commit(CommitRequest(SCOPE, None, [add("kept entry")]))
    for scope in (SCOPE, "never-written"):
        assert await store.get_version(scope, NUL) is None
        assert await store.latest_version(scope, NUL) is None
        assert await store.entry_versions(scope, NUL) == []
        assert await store.entry_heads(scope, [NUL]) == {}
        assert await store.idempotent_write(scope, NUL) is None
        assert await store.tombstones(TombstoneQuery(scope, entry_id=NUL)) == []
        assert await store.tombstones(TombstoneQuery(scope, entry_version_id=NUL)) == []


async def test_nul_metadata_through_the_service_leaves_filters_working(store: MemoryStore) -> None:
    memory = MemoryService(store, embedder=HashingEmbedder()).for_scope(SCOPE)
    await memory.remember(RememberMemoryRequest(text="tagged entry", metadata={"k": "v"}))
    # The request refuses it (memory/values.py); a request built past validation, as a
    # caller of the port could, is refused by the store.
    with pytest.raises(ValidationError, match="NUL"):
        RememberMemoryRequest(text="poison", metadata={"k": NUL})
    poison = RememberMemoryRequest.model_construct(
        **(RememberMemoryRequest(text="poison").__dict__ | {"metadata": {"k": NUL}})
    )
    with pytest.raises(MemoryValidationError, match="NUL"):
        await memory.remember(poison)
    page = await memory.list(where=MemoryFilter(metadata={"k": {"exists": True}}))
    assert [entry.text for entry in page.entries] == ["tagged entry"]
