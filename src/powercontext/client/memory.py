"""Scoped Memory over HTTP: the same methods and models as the runtime's ScopedMemory."""

from __future__ import annotations

import inspect
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Sequence,
)
from typing import Any, Concatenate, ParamSpec, TypeVar, get_args, get_type_hints

from powercontext.client import transfer, wire
from powercontext.client.transport import AsyncTransport, SyncTransport
from powercontext.memory.erasure import (
    ForgetMemoryRequest,
    ForgetScopeRequest,
    MemoryForgetResult,
)
from powercontext.memory.history import MemoryEntryHistory
from powercontext.memory.models import (
    MemoryChangesPage,
    MemoryCitation,
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
from powercontext.memory.scoped import validate_scope_id
from powercontext.memory.scopes import ScopeSummary
from powercontext.memory.transfer import ImportProgress, ImportResult, OnExisting

P = ParamSpec("P")
T = TypeVar("T")


def _awaited(
    name: str, call: Callable[Concatenate[str, P], wire.Call[T]]
) -> Callable[Concatenate[AsyncScopedMemoryClient, P], Coroutine[Any, Any, T]]:
    """The async client's method `name` that runs `call` for its scope: its parameters and
    their types are `call`'s after the scope id, declared once for both clients."""

    async def method(self: AsyncScopedMemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._t.run(call(self.scope_id, *args, **kwargs))

    return _described(method, name, call, "AsyncScopedMemoryClient")


def _blocking(
    name: str, call: Callable[Concatenate[str, P], wire.Call[T]]
) -> Callable[Concatenate[SyncScopedMemoryClient, P], T]:
    """The sync client's method `name`: as `_awaited`, blocking."""

    def method(self: SyncScopedMemoryClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._t.run(call(self.scope_id, *args, **kwargs))

    return _described(method, name, call, "SyncScopedMemoryClient")


M = TypeVar("M", bound=Callable[..., Any])


def _described(method: M, name: str, call: Callable[..., Any], owner: str) -> M:
    """`method` named as its class attribute, with `call`'s signature (`self` for the scope
    id, returning what the call parses), for help() and introspection."""
    signature = inspect.signature(call)
    scope, *rest = signature.parameters.values()
    method.__name__, method.__qualname__ = name, f"{owner}.{name}"
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[scope.replace(name="self", annotation=inspect.Parameter.empty), *rest],
        return_annotation=get_args(get_type_hints(call)["return"])[0],
    )
    return method


class AsyncScopedMemoryClient:
    """`await client.memory.for_scope("project").search(SearchMemoryRequest(query=...))`."""

    def __init__(self, transport: AsyncTransport, scope_id: str) -> None:
        self._t = transport
        self.scope_id = scope_id

    async def remember(self, request: RememberMemoryRequest) -> MemoryWriteResult:
        return await self._t.run(wire.remember(self.scope_id, request))

    async def remember_many(self, requests: Sequence[RememberMemoryRequest]) -> MemoryWriteResult:
        """Every entry in one call and one revision, all or nothing, whatever the batch's size
        (up to the server's RUNTIME_MAX_BATCH_ENTRIES; see powercontext.client.batches)."""
        return await self._t.run(wire.remember_many(self.scope_id, requests))

    async def revise(self, request: ReviseMemoryRequest) -> MemoryWriteResult:
        return await self._t.run(wire.revise(self.scope_id, request))

    async def retire(self, request: RetireMemoryRequest) -> MemoryWriteResult:
        return await self._t.run(wire.retire(self.scope_id, request))

    async def reactivate(self, request: ReactivateMemoryRequest) -> MemoryWriteResult:
        return await self._t.run(wire.reactivate(self.scope_id, request))

    async def forget(self, request: ForgetMemoryRequest | str) -> MemoryForgetResult:
        """Erase every version of an entry for good (410 `erased` for it afterwards)."""
        return await self._t.run(wire.forget(self.scope_id, request))

    async def forget_scope(self, request: ForgetScopeRequest | None = None) -> MemoryForgetResult:
        """Erase every entry version of this scope for good."""
        return await self._t.run(wire.forget_scope(self.scope_id, request or ForgetScopeRequest()))

    async def search(
        self, request: SearchMemoryRequest, *, include_rerank: wire.IncludeRerank = "none"
    ) -> MemorySearchPage:
        """Final hits and `page.rerank_status`; `page.rerank` is always None over HTTP, and
        `include_rerank="redacted"` fills `page.rerank_redacted` (no candidate text)."""
        return await self._t.run(wire.search(self.scope_id, request, include_rerank))

    async def search_batch(
        self,
        requests: Sequence[SearchMemoryRequest],
        *,
        include_rerank: wire.IncludeRerank = "none",
    ) -> tuple[MemorySearchPage, ...]:
        """One page per request, in order, all at one exact revision, in one HTTP call."""
        return await self._t.run(wire.search_batch(self.scope_id, requests, include_rerank))

    async def get(self, citation: MemoryCitation) -> MemoryEntry | None:
        return await self._t.run(wire.get(self.scope_id, citation))

    async def get_entry(self, entry_id: str, *, revision: int | None = None) -> MemoryEntry:
        """The version of `entry_id` active at `revision` (default the head); 404 otherwise."""
        return await self._t.run(wire.get_entry(self.scope_id, entry_id, revision))

    async def history(self, entry_id: str, *, revision: int | None = None) -> MemoryEntryHistory:
        """Every version and change of one entry, newest first, as of `revision`."""
        return await self._t.run(wire.history(self.scope_id, entry_id, revision))

    list = _awaited("list", wire.list_entries)

    async def changes(self, since_revision: int = 0, *, limit: int = 1000) -> MemoryChangesPage:
        return await self._t.run(wire.changes(self.scope_id, since_revision, limit))

    async def head(self) -> MemoryRef | None:
        return await self._t.run(wire.head(self.scope_id))

    def export_lines(self, *, revision: int | None = None) -> AsyncIterator[str]:
        """`async for line in scope.export_lines()`: the scope at `revision` (default the
        head) as JSON lines, each ending with a newline, streamed (see memory.transfer)."""
        return transfer.export_lines(self._t.http, self.scope_id, revision)

    async def import_lines(
        self,
        lines: AsyncIterable[str] | Iterable[str],
        *,
        on_existing: OnExisting = "fail",
        progress: ImportProgress | None = None,
    ) -> ImportResult:
        """Stream an export into this scope, keeping entry ids; `progress(sent, total)`."""
        return await transfer.import_lines(
            self._t.http, self.scope_id, lines, on_existing, progress
        )


class SyncScopedMemoryClient:
    """The blocking twin of AsyncScopedMemoryClient."""

    def __init__(self, transport: SyncTransport, scope_id: str) -> None:
        self._t = transport
        self.scope_id = scope_id

    def remember(self, request: RememberMemoryRequest) -> MemoryWriteResult:
        return self._t.run(wire.remember(self.scope_id, request))

    def remember_many(self, requests: Sequence[RememberMemoryRequest]) -> MemoryWriteResult:
        """As AsyncScopedMemoryClient.remember_many: one call, one revision."""
        return self._t.run(wire.remember_many(self.scope_id, requests))

    def revise(self, request: ReviseMemoryRequest) -> MemoryWriteResult:
        return self._t.run(wire.revise(self.scope_id, request))

    def retire(self, request: RetireMemoryRequest) -> MemoryWriteResult:
        return self._t.run(wire.retire(self.scope_id, request))

    def reactivate(self, request: ReactivateMemoryRequest) -> MemoryWriteResult:
        return self._t.run(wire.reactivate(self.scope_id, request))

    def forget(self, request: ForgetMemoryRequest | str) -> MemoryForgetResult:
        """Erase every version of an entry for good (410 `erased` for it afterwards)."""
        return self._t.run(wire.forget(self.scope_id, request))

    def forget_scope(self, request: ForgetScopeRequest | None = None) -> MemoryForgetResult:
        """Erase every entry version of this scope for good."""
        return self._t.run(wire.forget_scope(self.scope_id, request or ForgetScopeRequest()))

    def search(
        self, request: SearchMemoryRequest, *, include_rerank: wire.IncludeRerank = "none"
    ) -> MemorySearchPage:
        """Final hits and `page.rerank_status`; `page.rerank` is always None over HTTP, and
        `include_rerank="redacted"` fills `page.rerank_redacted` (no candidate text)."""
        return self._t.run(wire.search(self.scope_id, request, include_rerank))

    def search_batch(
        self,
        requests: Sequence[SearchMemoryRequest],
        *,
        include_rerank: wire.IncludeRerank = "none",
    ) -> tuple[MemorySearchPage, ...]:
        """One page per request, in order, all at one exact revision, in one HTTP call."""
        return self._t.run(wire.search_batch(self.scope_id, requests, include_rerank))

    def get(self, citation: MemoryCitation) -> MemoryEntry | None:
        return self._t.run(wire.get(self.scope_id, citation))

    def get_entry(self, entry_id: str, *, revision: int | None = None) -> MemoryEntry:
        """The version of `entry_id` active at `revision` (default the head); 404 otherwise."""
        return self._t.run(wire.get_entry(self.scope_id, entry_id, revision))

    def history(self, entry_id: str, *, revision: int | None = None) -> MemoryEntryHistory:
        """Every version and change of one entry, newest first, as of `revision`."""
        return self._t.run(wire.history(self.scope_id, entry_id, revision))

    list = _blocking("list", wire.list_entries)

    def changes(self, since_revision: int = 0, *, limit: int = 1000) -> MemoryChangesPage:
        return self._t.run(wire.changes(self.scope_id, since_revision, limit))

    def head(self) -> MemoryRef | None:
        return self._t.run(wire.head(self.scope_id))

    def export_lines(self, *, revision: int | None = None) -> Iterator[str]:
        """The scope at `revision` (default the head) as JSON lines, streamed."""
        return transfer.export_lines_sync(self._t.http, self.scope_id, revision)

    def import_lines(
        self,
        lines: Iterable[str],
        *,
        on_existing: OnExisting = "fail",
        progress: ImportProgress | None = None,
    ) -> ImportResult:
        """Stream an export into this scope, keeping entry ids; `progress(sent, total)`."""
        return transfer.import_lines_sync(self._t.http, self.scope_id, lines, on_existing, progress)


class AsyncMemoryClient:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    def for_scope(self, scope_id: str) -> AsyncScopedMemoryClient:
        return AsyncScopedMemoryClient(self._t, validate_scope_id(scope_id))

    async def scopes(self) -> tuple[ScopeSummary, ...]:
        """The scopes this key may use, with head revision and entry count."""
        return await self._t.run(wire.scopes())


class SyncMemoryClient:
    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def for_scope(self, scope_id: str) -> SyncScopedMemoryClient:
        return SyncScopedMemoryClient(self._t, validate_scope_id(scope_id))

    def scopes(self) -> tuple[ScopeSummary, ...]:
        """The scopes this key may use, with head revision and entry count."""
        return self._t.run(wire.scopes())
