"""MemoryService: the one entry point to a store's memory, its writes, reads and searches.

Writes (memory.writes) hold the scope's in-process lock and commit with a CAS in the store.
Searches take no lock: they read the head once and pass that exact revision to every later read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from powercontext.memory import writes
from powercontext.memory.calls import CallGate, gated
from powercontext.memory.commit import Planner
from powercontext.memory.cursors import decode_cursor, encode_cursor
from powercontext.memory.entries import entry_at, entry_from_stored
from powercontext.memory.erasure import (
    ForgetMemoryRequest,
    ForgetScopeRequest,
    MemoryForgetResult,
    forget,
)
from powercontext.memory.errors import (
    InvalidCursorError,
    MemoryValidationError,
    NotFoundError,
)
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.indexing.context import IndexSource
from powercontext.memory.indexing.profile import IndexProfiles, index_profile
from powercontext.memory.indexing.rebuild import rebuild_scope
from powercontext.memory.indexing.threads import ThreadIndexer, WriteIndex
from powercontext.memory.indexing.vectors import ProgressCallback, VectorIndexer
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
from powercontext.memory.ports import (
    EmbeddingModel,
    IdempotencyClaim,
    MemoryReranker,
    MemoryStore,
    NewVersion,
    StoredVersion,
    VersionPage,
)
from powercontext.memory.scoped import ScopedMemory, validate_scope_id
from powercontext.memory.scopes import ScopeSummary, scope_summaries
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.search.pipeline import SearchPipeline
from powercontext.memory.tombstones import raise_if_entry_erased, raise_if_version_erased
from powercontext.memory.transfer import EntryCounts, NewEntry, OnExisting, add_entries
from powercontext.memory.values import ResolvedMode

log = logging.getLogger("powercontext.memory")


@dataclass(frozen=True, slots=True)
class SearchObservation:
    """What one search did, for metrics; carries no text."""

    mode: ResolvedMode
    hits: int
    reranked: bool
    used_fallback: bool
    rerank_latency_ms: float


SearchObserver = Callable[[SearchObservation], None]
LIBRARY_DEFAULTS = SearchConfig()
"""The search settings of a service built without any (the server builds its own)."""


class MemoryService:
    """Every scope's Memory over one store (`runtime.memory`); `for_scope` gives one scope."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        embedder: EmbeddingModel | None = None,
        reranker: MemoryReranker | None = None,
        config: SearchConfig = LIBRARY_DEFAULTS,
        observer: SearchObserver | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.reranker = reranker
        self.config = config
        self._observer = observer
        self._locks: dict[str, asyncio.Lock] = {}
        self.calls = CallGate()
        """The calls in flight; the runtime closes it before the store (memory.calls)."""
        self.indexer = VectorIndexer(
            store, embedder, self.config.embedding_batch_size, self.config.index
        )
        self.threads = ThreadIndexer(store, self.config.index, self.config.analyzer)
        self.profiles = IndexProfiles(store, index_profile(self.config.index, self.config.analyzer))

    def for_scope(self, scope_id: str) -> ScopedMemory:
        """The Memory of `scope_id` (MemoryValidationError for a blank or invalid id)."""
        return ScopedMemory(self, validate_scope_id(scope_id))

    def _lock(self, scope_id: str) -> asyncio.Lock:
        return self._locks.setdefault(scope_id, asyncio.Lock())

    def lock_of(self, scope_id: str) -> asyncio.Lock:
        """The scope's in-process write lock (erasure takes it like every write)."""
        return self._lock(scope_id)

    @gated
    async def forget(
        self, scope_id: str, request: ForgetMemoryRequest, *, actor: str | None = None
    ) -> MemoryForgetResult:
        """Erase every version of the request's entries (see memory.erasure)."""
        return await forget(self, scope_id, request, actor=actor)

    @gated
    async def forget_scope(
        self, scope_id: str, request: ForgetScopeRequest, *, actor: str | None = None
    ) -> MemoryForgetResult:
        """Erase every entry version of the scope (see memory.erasure)."""
        return await forget(self, scope_id, request, actor=actor)

    # ---- writes ---------------------------------------------------------------------------

    def new_version(
        self,
        entry_id: str,
        version: int,
        source: IndexSource,
        tokens: str | None = None,
    ) -> NewVersion:
        """The version to store for `source` (see memory.writes)."""
        return writes.new_version(self.config, entry_id, version, source, tokens)

    @gated
    async def remember_many(
        self, scope_id: str, requests: Sequence[RememberMemoryRequest]
    ) -> MemoryWriteResult:
        """Every entry in one revision (PayloadTooLargeError beyond max_batch_entries)."""
        return await writes.remember_many(self, scope_id, requests)

    @gated
    async def add_entries(
        self, scope_id: str, entries: Sequence[NewEntry], on_existing: OnExisting = "fail"
    ) -> tuple[MemoryWriteResult | None, EntryCounts]:
        """Entries under their own ids in one revision (None: all skipped); see transfer."""
        return await add_entries(self, scope_id, entries, on_existing)

    @gated
    async def revise(self, scope_id: str, request: ReviseMemoryRequest) -> MemoryWriteResult:
        """See ScopedMemory.revise."""
        return await writes.revise(self, scope_id, request)

    @gated
    async def retire(self, scope_id: str, request: RetireMemoryRequest) -> MemoryWriteResult:
        """See ScopedMemory.retire."""
        return await writes.retire(self, scope_id, request)

    @gated
    async def reactivate(
        self, scope_id: str, request: ReactivateMemoryRequest
    ) -> MemoryWriteResult:
        """See ScopedMemory.reactivate."""
        return await writes.reactivate(self, scope_id, request)

    @gated
    async def write_planned(
        self,
        scope_id: str,
        expected: int | None,
        plan: Planner,
        claim: IdempotencyClaim | None,
        planned: Callable[[], WriteIndex] | None = None,
        removed: Callable[[], Sequence[StoredVersion]] | None = None,
    ) -> MemoryWriteResult:
        """Commit a plan and index what it wrote (see memory.writes)."""
        return await writes.write_planned(self, scope_id, expected, plan, claim, planned, removed)

    # ---- index profiles ------------------------------------------------------------------

    @gated
    async def rebuild(self, scope_id: str, progress: ProgressCallback | None = None) -> int:
        """Re-derive every active version's tokens and vectors under the current profile, and
        those of the inactive versions that sit in a sequence (indexing.rebuild)."""
        async with self._lock(scope_id):
            count = await rebuild_scope(
                self.indexer,
                self.config.index,
                self.config.analyzer,
                scope_id,
                progress or (lambda _done, _total: None),
            )
            await self.profiles.mark_rebuilt(scope_id)
        return count

    # ---- embeddings ------------------------------------------------------------------------

    @gated
    async def pending_vectors(self, scope_id: str) -> int:
        """See ScopedMemory.pending_vectors."""
        return await self.indexer.pending(scope_id)

    @gated
    async def reindex(self, scope_id: str, progress: ProgressCallback | None = None) -> int:
        """See ScopedMemory.reindex."""
        return await self.indexer.reindex(scope_id, progress)

    # ---- reads -----------------------------------------------------------------------------

    @gated
    async def get(self, scope_id: str, citation: MemoryCitation) -> MemoryEntry | None:
        """See ScopedMemory.get."""
        if citation.memory_ref.scope_id != scope_id:
            return None
        stored = await self.store.get_version(scope_id, citation.entry_version_id)
        if stored is None:
            await raise_if_version_erased(self.store, scope_id, citation.entry_version_id)
            return None
        if stored.entry_id != citation.entry_id:
            return None
        # A citation names a revision at which the version existed: not one before it was
        # written, nor one the scope has not reached (echoing a made-up revision back would
        # vouch for a snapshot that never was).
        revision = citation.memory_ref.revision
        if revision < stored.added_revision or revision > (await self.store.head(scope_id) or 0):
            return None
        return entry_from_stored(scope_id, revision, stored)

    @gated
    async def get_entry(
        self, scope_id: str, entry_id: str, *, revision: int | None = None
    ) -> MemoryEntry:
        """The version of `entry_id` active at `revision` (default the head); ErasedError
        when it was erased."""
        try:
            return await entry_at(self.store, scope_id, entry_id, revision)
        except NotFoundError:
            await raise_if_entry_erased(self.store, scope_id, entry_id)
            raise

    @gated
    async def list(
        self,
        scope_id: str,
        *,
        revision: int | None = None,
        cursor: str | None = None,
        limit: int = 100,
        where: MemoryFilter | None = None,
    ) -> MemoryEntriesPage:
        """See ScopedMemory.list."""
        if not 1 <= limit <= 1000:
            raise MemoryValidationError("limit must be between 1 and 1000")
        head = await self.store.head(scope_id)
        if head is None:  # never written: no revision or cursor of it can exist
            if revision is not None:
                raise NotFoundError(f"scope {scope_id!r} has no revision {revision}")
            if cursor is not None:
                raise _foreign_cursor(scope_id)
            return MemoryEntriesPage(memory_ref=None, entries=())
        at = head if revision is None else revision
        if not 1 <= at <= head:
            raise NotFoundError(f"scope {scope_id!r} has no revision {at}")
        after = await self._cursor_key(scope_id, cursor, at)
        rows = await self.store.list_versions(
            VersionPage(scope_id, at, after_key=after, limit=limit + 1, where=where)
        )
        more = len(rows) > limit
        rows = rows[:limit]
        entries = tuple(entry_from_stored(scope_id, at, row) for row in rows)
        next_cursor = encode_cursor(at, rows[-1].entry_version_id) if more and rows else None
        return MemoryEntriesPage(
            memory_ref=MemoryRef(scope_id=scope_id, revision=at),
            entries=entries,
            next_cursor=next_cursor,
        )

    async def _cursor_key(self, scope_id: str, cursor: str | None, revision: int) -> int | None:
        """The row key a cursor resumes after, looked up in this scope only."""
        if cursor is None:
            return None
        stored = await self.store.get_version(scope_id, decode_cursor(cursor, revision))
        if stored is None:
            raise _foreign_cursor(scope_id)
        return stored.key

    @gated
    async def changes(
        self, scope_id: str, *, since_revision: int = 0, limit: int = 1000
    ) -> MemoryChangesPage:
        """See ScopedMemory.changes."""
        if since_revision < 0 or not 1 <= limit <= 10_000:
            raise MemoryValidationError("since_revision must be >= 0 and limit 1..10000")
        head = await self.store.head(scope_id)
        changes = await self.store.changes(scope_id, since_revision, limit=limit)
        next_since = changes[-1].revision if changes else since_revision
        return MemoryChangesPage(
            memory_ref=MemoryRef(scope_id=scope_id, revision=head) if head else None,
            changes=tuple(changes),
            next_since_revision=next_since,
        )

    @gated
    async def scopes(self, allows: Callable[[str], bool] | None = None) -> tuple[ScopeSummary, ...]:
        """The scopes `allows` admits (all by default), with head revision and entry count."""
        return await scope_summaries(self.store, allows)

    @gated
    async def head(self, scope_id: str) -> MemoryRef | None:
        """See ScopedMemory.head."""
        head = await self.store.head(scope_id)
        return MemoryRef(scope_id=scope_id, revision=head) if head else None

    # ---- search ----------------------------------------------------------------------------

    @gated
    async def search(self, scope_id: str, request: SearchMemoryRequest) -> MemorySearchPage:
        """See ScopedMemory.search."""
        await self.profiles.warn_if_stale(scope_id)
        page = await SearchPipeline(self).search(scope_id, request)
        self._observe(page)
        return page

    @gated
    async def search_batch(
        self, scope_id: str, requests: Sequence[SearchMemoryRequest]
    ) -> tuple[MemorySearchPage, ...]:
        """One page per request, in order, every page at the same exact revision."""
        if not requests:
            raise MemoryValidationError("a batch search needs at least one request")
        if len(requests) > self.config.max_batch_queries:
            raise MemoryValidationError(
                f"batch of {len(requests)} searches exceeds the limit of "
                f"{self.config.max_batch_queries} (POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_QUERIES)"
            )
        await self.profiles.warn_if_stale(scope_id)
        pages = await SearchPipeline(self).search_batch(scope_id, requests)
        for page in pages:
            self._observe(page)
        return pages

    def _observe(self, page: MemorySearchPage) -> None:
        if self._observer is None:
            return
        trace = page.rerank
        self._observer(
            SearchObservation(
                mode=page.mode,
                hits=len(page.hits),
                reranked=trace is not None,
                used_fallback=bool(trace and trace.used_fallback),
                rerank_latency_ms=trace.latency_ms if trace else 0.0,
            )
        )


def _foreign_cursor(scope_id: str) -> InvalidCursorError:
    return InvalidCursorError(
        f"the cursor names no entry version of scope {scope_id!r}: pass a next_cursor exactly "
        "as received, with the scope it came from"
    )
