"""Where `powercontext memory ...` runs: a server through the SDK, or the embedded store."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from powercontext.memory.erasure import (
    ForgetMemoryRequest,
    ForgetScopeRequest,
    MemoryForgetResult,
)
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.history import MemoryEntryHistory
from powercontext.memory.models import (
    MemoryChangesPage,
    MemoryCitation,
    MemoryEntriesPage,
    MemoryEntry,
    MemoryRef,
    MemorySearchPage,
    MemoryWriteResult,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.transfer import ImportProgress, ImportResult, OnExisting


class CliMemory(Protocol):
    """What the commands use; the runtime's ScopedMemory and the SDK's both provide it."""

    async def remember(self, request: RememberMemoryRequest) -> MemoryWriteResult: ...

    async def search(self, request: SearchMemoryRequest) -> MemorySearchPage: ...

    async def search_batch(
        self, requests: Sequence[SearchMemoryRequest]
    ) -> tuple[MemorySearchPage, ...]: ...

    async def list(
        self,
        *,
        revision: int | None = None,
        cursor: str | None = None,
        limit: int = 100,
        where: MemoryFilter | None = None,
    ) -> MemoryEntriesPage: ...

    async def get(self, citation: MemoryCitation) -> MemoryEntry | None: ...

    async def get_entry(self, entry_id: str, *, revision: int | None = None) -> MemoryEntry: ...

    async def history(
        self, entry_id: str, *, revision: int | None = None
    ) -> MemoryEntryHistory: ...

    async def retire(self, request: RetireMemoryRequest) -> MemoryWriteResult: ...

    async def revise(self, request: ReviseMemoryRequest) -> MemoryWriteResult: ...

    async def reactivate(self, request: ReactivateMemoryRequest) -> MemoryWriteResult: ...

    async def changes(self, since_revision: int = 0, *, limit: int = 1000) -> MemoryChangesPage: ...

    async def head(self) -> MemoryRef | None: ...

    async def forget(self, request: ForgetMemoryRequest | str) -> MemoryForgetResult: ...

    async def forget_scope(
        self, request: ForgetScopeRequest | None = None
    ) -> MemoryForgetResult: ...

    def export_lines(self, *, revision: int | None = None) -> AsyncIterator[str]: ...

    async def import_lines(
        self,
        lines: AsyncIterable[str] | Iterable[str],
        *,
        on_existing: OnExisting = "fail",
        progress: ImportProgress | None = None,
    ) -> ImportResult: ...


@dataclass(frozen=True)
class Target:
    local: bool
    server_url: str | None = None
    api_key: str | None = None


@asynccontextmanager
async def open_memory(target: Target, scope_id: str) -> AsyncIterator[CliMemory]:
    if target.local:
        from powercontext.runtime import open_runtime

        async with open_runtime() as runtime:
            yield runtime.memory.for_scope(scope_id)
    else:
        from powercontext.client import PowerContextClient

        async with PowerContextClient(target.server_url, api_key=target.api_key) as client:
            yield client.memory.for_scope(scope_id)
