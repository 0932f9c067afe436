"""ScopedMemory: the Memory of one scope, the object agents hold."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING

from pydantic import TypeAdapter, ValidationError

from powercontext.memory.arguments import (
    entry_id_argument,
    limit_argument,
    request_argument,
    requests_argument,
    revision_argument,
)
from powercontext.memory.erasure import (
    ForgetMemoryRequest,
    ForgetScopeRequest,
    MemoryForgetResult,
)
from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.history import MemoryEntryHistory, entry_history
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
from powercontext.memory.transfer import (
    EntryCounts,
    ImportProgress,
    ImportResult,
    NewEntry,
    OnExisting,
    ScopeExport,
    import_lines,
    open_export,
)
from powercontext.memory.values import ScopeId

if TYPE_CHECKING:
    from powercontext.memory.indexing.vectors import ProgressCallback
    from powercontext.memory.service import MemoryService

_SCOPE = TypeAdapter(ScopeId)


def validate_scope_id(scope_id: str) -> str:
    try:
        return _SCOPE.validate_python(scope_id)
    except ValidationError as exc:
        raise MemoryValidationError(f"invalid scope_id: {exc.errors()[0]['msg']}") from exc


class ScopedMemory:
    """The Memory of one scope (`runtime.memory.for_scope(scope_id)`): what agents hold.

    Every mutation makes one new immutable revision; reads name one exact revision."""

    def __init__(self, service: MemoryService, scope_id: str) -> None:
        self._service = service
        self.scope_id = scope_id

    async def remember(self, request: RememberMemoryRequest) -> MemoryWriteResult:
        """Write one entry as a new revision."""
        return await self._service.remember_many(
            self.scope_id, [request_argument("remember", request, RememberMemoryRequest)]
        )

    async def remember_many(self, requests: Sequence[RememberMemoryRequest]) -> MemoryWriteResult:
        """Every entry in one revision."""
        return await self._service.remember_many(
            self.scope_id, requests_argument("remember_many", requests, RememberMemoryRequest)
        )

    async def revise(self, request: ReviseMemoryRequest) -> MemoryWriteResult:
        """Write a new version of the cited entry (RevisionConflictError if it moved on)."""
        return await self._service.revise(
            self.scope_id, request_argument("revise", request, ReviseMemoryRequest)
        )

    async def retire(self, request: RetireMemoryRequest) -> MemoryWriteResult:
        """Make the cited entry inactive; its versions stay citable."""
        return await self._service.retire(
            self.scope_id, request_argument("retire", request, RetireMemoryRequest)
        )

    async def reactivate(self, request: ReactivateMemoryRequest) -> MemoryWriteResult:
        """Make a retired entry active again."""
        return await self._service.reactivate(
            self.scope_id, request_argument("reactivate", request, ReactivateMemoryRequest)
        )

    async def forget(
        self, request: ForgetMemoryRequest | str, *, actor: str | None = None
    ) -> MemoryForgetResult:
        """Erase every version of an entry (its id, or a request naming several) for good:
        text, metadata, tokens and vectors. A citation of it then raises ErasedError."""
        if isinstance(request, str):
            request = ForgetMemoryRequest(entry_ids=(entry_id_argument(request),))
        return await self._service.forget(self.scope_id, request, actor=actor)

    async def forget_scope(
        self, request: ForgetScopeRequest | None = None, *, actor: str | None = None
    ) -> MemoryForgetResult:
        """Erase every entry version of this scope for good; revisions and tombstones stay."""
        return await self._service.forget_scope(
            self.scope_id, request or ForgetScopeRequest(), actor=actor
        )

    async def add_entries(
        self, entries: Sequence[NewEntry], *, on_existing: OnExisting = "fail"
    ) -> tuple[MemoryWriteResult | None, EntryCounts]:
        """Entries under their own ids, in one revision (None when every one was skipped)."""
        return await self._service.add_entries(self.scope_id, entries, on_existing)

    async def export(self, *, revision: int | None = None) -> ScopeExport:
        """The scope at `revision` (default the head) as JSON lines: `header`, then
        `async for line in export.lines()`. NotFoundError when the scope has no revision."""
        return await open_export(
            self._service, self.scope_id, revision_argument("revision", revision)
        )

    async def export_lines(self, *, revision: int | None = None) -> AsyncIterator[str]:
        """The export's lines (header first), each ending with a newline, as the SDK's."""
        export = await self.export(revision=revision)
        async for line in export.lines():
            yield line

    async def import_lines(
        self,
        lines: AsyncIterable[str] | Iterable[str],
        *,
        on_existing: OnExisting = "fail",
        progress: ImportProgress | None = None,
    ) -> ImportResult:
        """Write an export's entries here, keeping their ids (see memory.transfer)."""
        return await import_lines(
            self._service, self.scope_id, lines, on_existing=on_existing, progress=progress
        )

    async def search(self, request: SearchMemoryRequest) -> MemorySearchPage:
        """Hits at one exact revision (default the head), reranked when a reranker is set."""
        return await self._service.search(
            self.scope_id, request_argument("search", request, SearchMemoryRequest)
        )

    async def search_batch(
        self, requests: Sequence[SearchMemoryRequest]
    ) -> tuple[MemorySearchPage, ...]:
        """One page per request, in order, all at one exact revision (see MemoryService)."""
        return await self._service.search_batch(
            self.scope_id, requests_argument("search_batch", requests, SearchMemoryRequest)
        )

    async def get(self, citation: MemoryCitation) -> MemoryEntry | None:
        """The exact entry version a citation names, forever; None when it names none here,
        ErasedError when it was erased."""
        return await self._service.get(
            self.scope_id, request_argument("get", citation, MemoryCitation)
        )

    async def get_entry(self, entry_id: str, *, revision: int | None = None) -> MemoryEntry:
        """The version of `entry_id` active at `revision` (default the head); NotFoundError
        when it does not exist or is retired then."""
        return await self._service.get_entry(
            self.scope_id,
            entry_id_argument(entry_id),
            revision=revision_argument("revision", revision),
        )

    async def history(self, entry_id: str, *, revision: int | None = None) -> MemoryEntryHistory:
        """Every version and change of one entry, newest first, as of `revision`."""
        return await entry_history(
            self, entry_id_argument(entry_id), revision_argument("revision", revision)
        )

    async def list(
        self,
        *,
        revision: int | None = None,
        cursor: str | None = None,
        limit: int = 100,
        where: MemoryFilter | None = None,
    ) -> MemoryEntriesPage:
        """Entries active at `revision` (default the head) that match `where`, by key."""
        return await self._service.list(
            self.scope_id,
            revision=revision_argument("revision", revision),
            cursor=cursor,
            limit=limit_argument("limit", limit, 1000),
            where=where,
        )

    async def changes(self, since_revision: int = 0, *, limit: int = 1000) -> MemoryChangesPage:
        """The change log after `since_revision`, oldest first (at most `limit`, 1..10000)."""
        return await self._service.changes(
            self.scope_id,
            since_revision=revision_argument("since_revision", since_revision, low=0) or 0,
            limit=limit_argument("limit", limit, 10_000),
        )

    async def head(self) -> MemoryRef | None:
        """The scope's latest revision; None before its first write."""
        return await self._service.head(self.scope_id)

    async def pending_vectors(self) -> int:
        """Active entries still without a vector of the current embedding profile."""
        return await self._service.pending_vectors(self.scope_id)

    async def reindex(self, progress: ProgressCallback | None = None) -> int:
        """Embed the entries still without a vector; returns how many were embedded."""
        return await self._service.reindex(self.scope_id, progress)
