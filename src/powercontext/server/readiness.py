"""Readiness: the database answers and the configured models are usable.

The database is asked on every probe (a cheap head read). The embedding model is asked to
embed a short probe at most once per `model_ttl` seconds (a failure is retried sooner), so a
paid provider is not called on every probe. The reranker is only reported, never called: a
rerank call costs a generation request.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass

from powercontext.memory.backfill import count_pending
from powercontext.memory.errors import failure_summary
from powercontext.runtime import Runtime
from powercontext.server.schemas import ReadinessCheck, ReadyResponse
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.connections import MEMORY

_PROBE_SCOPE = "__powercontext_readiness__"
_PROBE_TEXT = "readiness probe"


@dataclass
class _Cached:
    check: ReadinessCheck
    expires: float


class ReadinessProbe:
    def __init__(
        self,
        runtime: Runtime,
        *,
        timeout: float = 5.0,
        model_ttl: float = 300.0,
        failure_ttl: float = 10.0,
    ) -> None:
        self.runtime = runtime
        self.timeout = timeout
        self.model_ttl = model_ttl
        self.failure_ttl = failure_ttl
        self._embedder: _Cached | None = None
        self._lock = asyncio.Lock()
        self._file = _database_file(runtime)
        self._identity = _identity(self._file) if self._file is not None else None
        self.last_counted = 0
        """Vectors pending at this probe's last own count (what /metrics shows without a
        backfill, whose counts it shows otherwise)."""

    def vectors_pending(self) -> int:
        """The latest count known: the backfill's once it has counted, else this probe's."""
        backfill = self.runtime.backfill
        if backfill is not None and backfill.counted:
            return backfill.pending_total
        return self.last_counted

    async def check(self) -> ReadyResponse:
        # Concurrently: each check waits at most `timeout`, so a database that hangs (a
        # stopped PostgreSQL leaves the pool waiting) costs one timeout, not one per check.
        (pending, vectors), database, embedding_model, index_profile = await asyncio.gather(
            self._vectors(), self._database(), self._embedding_model(), self._index_profile()
        )
        checks = {
            "database": database,
            "embedding_model": embedding_model,
            "memory_reranker": self._reranker(),
            "vectors": vectors,
            "index_profile": index_profile,
        }
        ready = all(c.ok for c in checks.values())
        return ReadyResponse(
            status="ready" if ready else "not_ready", checks=checks, vectors_pending=pending
        )

    async def _vectors(self) -> tuple[int, ReadinessCheck]:
        """Pending vectors degrade search (fts only) but do not make the server unready."""
        backfill = self.runtime.backfill
        if self.runtime.embedding_model is None:
            return 0, ReadinessCheck(ok=True, detail="no embedding model configured")
        if backfill is not None and backfill.counted:
            pending = backfill.pending_total
        else:  # no backfill, or one whose first pass has not counted yet (just started)
            try:
                counts = await asyncio.wait_for(count_pending(self.runtime.memory), self.timeout)
            except Exception as exc:  # the database check reports the outage itself
                return 0, ReadinessCheck(ok=True, detail=f"not counted ({type(exc).__name__})")
            pending = self.last_counted = sum(counts.values())
        how = (
            "backfill is off: run `powercontext reindex`"
            if backfill is None
            else "the background backfill is filling them"
        )
        if not pending:
            return 0, ReadinessCheck(ok=True, detail="every active entry has its vector")
        return pending, ReadinessCheck(
            ok=True, detail=f"{pending} vectors pending (auto serves fts meanwhile); {how}"
        )

    async def _database(self) -> ReadinessCheck:
        try:
            await asyncio.wait_for(self.runtime.store.head(_PROBE_SCOPE), self.timeout)
        except Exception as exc:  # any failure means not ready; the type is enough to act on
            return ReadinessCheck(ok=False, detail=f"database unreachable ({type(exc).__name__})")
        if self._file is not None and _identity(self._file) != self._identity:
            # The open connections still answer from the old file, but what they write now is
            # gone at the next restart (deleted) or hidden by another file (replaced).
            return ReadinessCheck(
                ok=False,
                detail="the SQLite database file was deleted or replaced since the server "
                "opened it: writes now go to the old file; restart the server",
            )
        return ReadinessCheck(ok=True, detail="database answered")

    async def _embedding_model(self) -> ReadinessCheck:
        embedder = self.runtime.embedding_model
        if embedder is None:
            return ReadinessCheck(ok=True, detail="no embedding model configured (fts only)")
        async with self._lock:
            now = time.monotonic()
            if self._embedder is not None and now < self._embedder.expires:
                return self._embedder.check
            profile = embedder.profile
            try:
                vector = await asyncio.wait_for(embedder.embed_query(_PROBE_TEXT), self.timeout)
                ok = len(vector) == profile.dimension
                detail = (
                    f"{profile.profile_id} embedded a probe"
                    if ok
                    else f"{profile.profile_id} returned {len(vector)} dimensions, "
                    f"expected {profile.dimension}"
                )
            except Exception as exc:  # a provider's message may hold a secret: type only
                ok, detail = False, f"{profile.profile_id} failed ({failure_summary(exc)})"
            check = ReadinessCheck(ok=ok, detail=detail)
            ttl = self.model_ttl if ok else self.failure_ttl
            self._embedder = _Cached(check, time.monotonic() + ttl)
            return check

    async def _index_profile(self) -> ReadinessCheck:
        """Stale scopes are searchable (on their old index), so this never fails readiness."""
        try:
            stale = await asyncio.wait_for(
                self.runtime.memory.profiles.stale_scopes(), self.timeout
            )
        except Exception as exc:  # reported, not fatal: the database check says the rest
            return ReadinessCheck(ok=True, detail=f"not checked ({type(exc).__name__})")
        if not stale:
            return ReadinessCheck(
                ok=True, detail="every scope is indexed under the current profile"
            )
        return ReadinessCheck(
            ok=True,
            detail=f"{len(stale)} {'scope' if len(stale) == 1 else 'scopes'} indexed under an "
            "older profile (searchable); run "
            "`powercontext reindex --rebuild`",
        )

    def _reranker(self) -> ReadinessCheck:
        reranker = self.runtime.memory_reranker
        if reranker is None:
            return ReadinessCheck(ok=True, detail="reranking disabled")
        return ReadinessCheck(ok=True, detail=f"{reranker.policy_id} configured (not called)")


def _database_file(runtime: Runtime) -> str | None:
    """The SQLite file the store has open (None in memory or on PostgreSQL)."""
    store = runtime.store
    if not isinstance(store, SqliteMemoryStore) or store.target == MEMORY:
        return None
    return store.target


def _identity(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino
