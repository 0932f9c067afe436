"""SqliteMemoryStore: the embedded MemoryStore (one SQLite file in WAL mode, FTS5, numpy).

Every method hands its blocking SQLite work to a worker thread (`asyncio.to_thread`), so the
event loop never waits on the database. Writes go through the single writer connection;
reads use a pool of reader connections, each read in one snapshot.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.models import MemoryChange
from powercontext.memory.ports import (
    CommitRequest,
    CommitResult,
    ErasureRequest,
    ErasureResult,
    FtsCandidate,
    FtsQuery,
    IdempotentWrite,
    RevisionQuery,
    StoredVersion,
    Tombstone,
    TombstoneQuery,
    Vector,
    VectorCandidate,
    VectorQuery,
    VersionPage,
)
from powercontext.memory.search.fields import FieldWeights
from powercontext.storage.common import query_array, validate_plan
from powercontext.storage.sqlite import erasure, mapped, profiles, reads, writes
from powercontext.storage.sqlite.ann import IndexOptions
from powercontext.storage.sqlite.connections import (
    MEMORY,
    ConnectionOptions,
    ConnectionPool,
    WouldWait,
)
from powercontext.storage.sqlite.filter_keys import Keys, SharedFilterScans
from powercontext.storage.sqlite.fulltext import TermCache
from powercontext.storage.sqlite.vectors import VectorCache

T = TypeVar("T")
_POINT_READ_ROWS = 64
"""At most this many rows are fetched on the event loop (a page of hits); more take a thread."""
_SMALL_SCOPE_ROWS = 16_384
"""A scope of at most this many cached versions is searched by full text on the event loop
when its cache is current: a few hundred microseconds, less than the thread hand-off costs."""
_CATCH_UP_ROWS = 64
"""...or when its cache is at most this many new versions, retirements and token rewrites
behind (a write or two since the last search), which it reads there first."""


class SqliteMemoryStore:
    """Durable, revisioned Memory in one SQLite database. Open with `await open(path)`."""

    def __init__(
        self, pool: ConnectionPool, target: str, index: IndexOptions | None = None
    ) -> None:
        self._pool = pool
        self.index = index or IndexOptions()
        if self.index.fulltext not in ("memory", "fts5"):
            raise MemoryValidationError(f"unknown fulltext mode {self.index.fulltext!r}")
        self.filter_scans = SharedFilterScans()
        self.target = target
        """The database file, or `:memory:`."""
        self._vectors = VectorCache(options=self.index, db_path=target)
        snapshot_db = target if self.index.snapshots else None
        self._terms = TermCache(db_path=snapshot_db, snapshot_min_rows=self.index.snapshot_min_rows)

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        options: ConnectionOptions | None = None,
        index: IndexOptions | None = None,
    ) -> SqliteMemoryStore:
        """Open (creating the file and its parent directories) and migrate the schema.

        `index` chooses how searches run (in-memory BM25 or FTS5, HNSW or exact vectors).
        """
        pool = await asyncio.to_thread(ConnectionPool.open, path, options or ConnectionOptions())
        return cls(pool, pool.target, index)

    async def __aenter__(self) -> SqliteMemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _read(self, work: Callable[[sqlite3.Connection], T], doing: str) -> T:
        return await asyncio.to_thread(self._pool.read, work, doing)

    async def _read_point(self, work: Callable[[sqlite3.Connection], T], doing: str) -> T:
        """A read of a few rows by key: on the loop when that need not wait (a thread
        hand-off costs more than such a read), else as any read."""
        try:
            return self._pool.read_now(work, doing)
        except WouldWait:
            return await self._read(work, doing)

    async def _write(self, work: Callable[[sqlite3.Connection], T], doing: str) -> T:
        return await asyncio.to_thread(self._pool.write, work, doing)

    async def head(self, scope_id: str) -> int | None:
        return await self._read_point(lambda conn: reads.head(conn, scope_id), "reading the head")

    async def commit(self, request: CommitRequest) -> CommitResult:
        planned = list(request.changes)

        def work(conn: sqlite3.Connection) -> CommitResult:
            # The clock is read under the write lock, so created_at follows revision order.
            now = datetime.now(UTC)
            return writes.commit(
                conn, request.scope_id, request.expected_head, planned, now, request.idempotency
            )

        def run() -> CommitResult:
            validate_plan(planned)
            return self._pool.write(work, f"committing {len(planned)} changes")

        return await asyncio.to_thread(run)

    async def latest_version(self, scope_id: str, entry_id: str) -> StoredVersion | None:
        return await self._read(
            lambda conn: reads.latest_version(conn, scope_id, entry_id), "reading an entry"
        )

    async def entry_heads(
        self, scope_id: str, entry_ids: Sequence[str]
    ) -> dict[str, StoredVersion]:
        wanted = list(entry_ids)
        return await self._read(
            lambda conn: reads.entry_heads(conn, scope_id, wanted), "reading entries"
        )

    async def idempotent_write(self, scope_id: str, key: str) -> IdempotentWrite | None:
        return await self._read(
            lambda conn: reads.idempotent_write(conn, scope_id, key), "reading an idempotency key"
        )

    async def entry_versions(self, scope_id: str, entry_id: str) -> list[StoredVersion]:
        return await self._read(
            lambda conn: reads.entry_versions(conn, scope_id, entry_id), "reading an entry"
        )

    async def get_version(self, scope_id: str, entry_version_id: str) -> StoredVersion | None:
        return await self._read(
            lambda conn: reads.get_version(conn, scope_id, entry_version_id),
            "reading an entry version",
        )

    async def fetch_versions(self, scope_id: str, keys: Sequence[int]) -> dict[int, StoredVersion]:
        wanted = list(keys)
        read = self._read_point if len(wanted) <= _POINT_READ_ROWS else self._read
        return await read(
            lambda conn: reads.fetch_versions(conn, scope_id, wanted), "fetching entry versions"
        )

    async def list_versions(self, page: VersionPage) -> list[StoredVersion]:
        return await self._read(
            lambda conn: reads.list_versions(conn, page), "listing entry versions"
        )

    async def changes(
        self, scope_id: str, since_revision: int, *, limit: int
    ) -> list[MemoryChange]:
        return await self._read(
            lambda conn: reads.changes(conn, scope_id, since_revision, limit), "reading changes"
        )

    async def fts_candidates(self, query: FtsQuery) -> list[FtsCandidate]:
        wanted = replace(query, terms=[str(term) for term in query.terms])
        if not wanted.terms:
            return []
        if self.index.fulltext == "fts5":
            return await self._read(
                lambda conn: reads.fts5_candidates(conn, wanted), "searching the full-text index"
            )
        postings = self._terms.get(query.scope_id)
        allowed = await self._filtered_keys(query)
        fields = query.fields or FieldWeights()
        ceiling = query.term_ceiling

        def search() -> list[FtsCandidate]:  # under the postings' lock
            return postings.search(
                query.revision,
                wanted.terms,
                query.limit,
                fields,
                allowed,
                ceiling,
                query.common_term_entries,
            )

        def work(conn: sqlite3.Connection) -> list[FtsCandidate]:
            with postings.lock:
                postings.refresh(conn)
                return search()

        def at_once(conn: sqlite3.Connection) -> list[FtsCandidate]:
            # Only a cache with little or nothing to read: a longer catch-up takes a thread.
            if not postings.lock.acquire(blocking=False):
                raise WouldWait
            try:
                if not postings.is_current(conn) and not postings.refresh_if_small(
                    conn, _CATCH_UP_ROWS
                ):
                    raise WouldWait
                return search()
            finally:
                postings.lock.release()

        if postings.size <= _SMALL_SCOPE_ROWS:
            try:
                return self._pool.read_now(at_once, "searching the full-text index")
            except WouldWait:
                pass
        return await self._read(work, "searching the full-text index")

    async def vector_candidates(self, query: VectorQuery) -> list[VectorCandidate]:
        vector = query_array(query.vector)
        matrix = self._vectors.get(query.scope_id, query.profile_id)
        allowed = await self._filtered_keys(query)

        def work(conn: sqlite3.Connection) -> list[VectorCandidate]:
            with matrix.lock:
                matrix.refresh(conn)
                return matrix.search(query.revision, vector, query.limit, allowed)

        return await self._read(work, "searching vectors")

    async def _filtered_keys(self, query: RevisionQuery) -> Keys | None:
        """One scan per (scope, revision, filter) in flight, shared by concurrent channels."""

        async def scan() -> Keys | None:
            return await self._read(
                lambda conn: reads.filtered_keys(conn, query), "filtering entries"
            )

        return await self.filter_scans.keys(query.scope_id, query.revision, query.where, scan)

    async def missing_vector_count(self, scope_id: str, revision: int, profile_id: str) -> int:
        matrix = self._vectors.get(scope_id, profile_id)

        def work(conn: sqlite3.Connection) -> int:
            total = reads.active_count(conn, scope_id, revision)
            if total == 0:
                return 0
            with matrix.lock:
                matrix.refresh(conn, persist=False)
                return max(total - matrix.active_count(revision), 0)

        return await self._read(work, "counting missing vectors")

    async def versions_missing_vectors(
        self, scope_id: str, profile_id: str, *, limit: int
    ) -> list[StoredVersion]:
        return await self._read(
            lambda conn: reads.versions_missing_vectors(conn, scope_id, profile_id, limit),
            "listing versions without vectors",
        )

    async def thread_tail(
        self, scope_id: str, thread: str, *, limit: int, before_key: int | None = None
    ) -> list[StoredVersion]:
        return await self._read(
            lambda conn: reads.thread_tail(conn, scope_id, thread, limit, before_key),
            "reading a thread",
        )

    async def removed_versions(
        self, scope_id: str, *, threads: Sequence[str] | None, batches: Sequence[int] | None
    ) -> list[StoredVersion]:
        return await self._read(
            lambda conn: erasure.removed_versions(conn, scope_id, threads, batches),
            "reading the removed versions of index sequences",
        )

    async def erased_since(self, scope_id: str, revision: int) -> bool:
        # Every contextual write asks this: a few rows of the change log, read on the loop.
        return await self._read_point(
            lambda conn: erasure.erased_since(conn, scope_id, revision),
            "reading the scope's erasures",
        )

    async def delete_vectors(
        self, scope_id: str, keys: Sequence[int], *, keep_profile: str | None = None
    ) -> None:
        def run() -> None:
            work = lambda conn: erasure.delete_vectors(conn, scope_id, keys, keep_profile)  # noqa: E731
            if self._pool.write(work, f"deleting the vectors of {len(keys)} versions"):
                self._vectors.drop(scope_id)
                mapped.discard(self.target)

        await asyncio.to_thread(run)

    async def rewrite_index_tokens(self, scope_id: str, items: Sequence[tuple[int, str]]) -> None:
        pending = list(items)
        if not pending:
            return

        def run() -> None:
            self._pool.write(
                lambda conn: writes.rewrite_tokens(conn, scope_id, pending),
                f"rewriting the tokens of {len(pending)} versions",
            )

        await asyncio.to_thread(run)

    async def index_profile(self, scope_id: str) -> str | None:
        return await self._read(lambda conn: profiles.read(conn, scope_id), "reading a profile")

    async def index_profiles(self) -> dict[str, str]:
        return await self._read(profiles.read_all, "reading index profiles")

    async def set_index_profile(self, scope_id: str, profile: str) -> None:
        record = profiles.recorder(scope_id, profile, datetime.now(UTC).isoformat())
        await asyncio.to_thread(self._pool.write, record, "recording the index profile")

    async def put_vectors(
        self, scope_id: str, profile_id: str, items: Sequence[tuple[int, Vector]]
    ) -> None:
        pending = list(items)
        if not pending:
            return

        def run() -> None:
            encoded = writes.encode_vectors(pending)
            self._pool.write(
                lambda conn: writes.put_vectors(conn, scope_id, profile_id, encoded),
                f"storing {len(encoded)} vectors",
            )

        await asyncio.to_thread(run)

    async def erase(self, request: ErasureRequest) -> ErasureResult:
        entry_ids = request.entry_ids
        wanted = replace(request, entry_ids=None if entry_ids is None else list(entry_ids))

        def work(conn: sqlite3.Connection) -> ErasureResult:
            return erasure.erase(conn, wanted, datetime.now(UTC))

        def run() -> ErasureResult:
            result = self._pool.write(work, "erasing entries")
            if result.erased:
                self._terms.drop(request.scope_id)
                self._vectors.drop(request.scope_id)
                # Snapshot files hold the erased tokens and vectors too; a snapshot another
                # process writes from an older read carries an older erasure count and is
                # cleared when mapped (storage.sqlite.vector_snapshots).
                mapped.discard(self.target)
            return result

        return await asyncio.to_thread(run)

    async def scrub(self, scope_id: str) -> None:
        """FTS5 optimize, then a truncating WAL checkpoint (see storage.sqlite.erasure)."""

        def run() -> None:
            self._pool.write(erasure.optimize_fulltext, "merging the full-text index")
            if self.target != MEMORY:
                self._pool.outside_transaction(
                    lambda conn: erasure.checkpoint(conn, self.target), "checkpointing the WAL"
                )

        await asyncio.to_thread(run)

    async def tombstones(self, query: TombstoneQuery) -> list[Tombstone]:
        return await self._read(lambda conn: erasure.tombstones(conn, query), "reading tombstones")

    async def active_count(self, scope_id: str, revision: int) -> int:
        return await self._read(
            lambda conn: reads.active_count(conn, scope_id, revision), "counting entries"
        )

    async def scope_ids(self) -> list[str]:
        return await self._read(reads.scope_ids, "listing scopes")

    def drop_caches(self) -> None:
        """Forget this store's cached matrices and postings and delete the database's vector
        and term snapshots: what must follow deleting vectors or tokens in place (erasure),
        which the incremental refresh cannot see. Other processes must drop theirs too."""
        self._vectors.clear()
        self._terms.clear()
        mapped.discard(self.target)

    async def close(self) -> None:
        await asyncio.to_thread(self._pool.close)
