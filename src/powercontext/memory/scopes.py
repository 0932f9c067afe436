"""The scopes a caller may use, each with its head revision and active entry count."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from powercontext.memory.models import MemoryRef
from powercontext.memory.ports import MemoryStore


class ScopeSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    scope_id: str
    memory_ref: MemoryRef
    """The scope's head revision."""
    entry_count: int = Field(ge=0)
    """Entries active at the head."""


async def scope_summaries(
    store: MemoryStore, allows: Callable[[str], bool] | None = None
) -> tuple[ScopeSummary, ...]:
    """Every scope with at least one revision that `allows` admits, sorted by scope_id."""
    found: list[ScopeSummary] = []
    for scope_id in sorted(await store.scope_ids()):
        if allows is not None and not allows(scope_id):
            continue
        head = await store.head(scope_id)
        if head is None:
            continue
        found.append(
            ScopeSummary(
                scope_id=scope_id,
                memory_ref=MemoryRef(scope_id=scope_id, revision=head),
                entry_count=await store.active_count(scope_id, head),
            )
        )
    return tuple(found)
