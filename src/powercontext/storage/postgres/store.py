"""PostgresMemoryStore: the MemoryStore on PostgreSQL (tsvector + GIN, pgvector + HNSW).

Every call borrows a connection from the store's pool (storage.postgres.pool, which also
opens it after migrating) and hands the statements to `reads`, `writes`, `fts_search`,
`vectors` and `erasure`. What stays here is what needs the store's memory across calls: the
choice between a graph walk and an exact scan, and the hints that spare repeated scans.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

import numpy as np
import psycopg
from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from powercontext.memory.errors import MemoryValidationError, NotFoundError, RevisionConflictError
from powercontext.memory.models import MemoryChange
from powercontext.memory.ports import (
    CommitRequest,
    CommitResult,
    ErasureRequest,
    ErasureResult,
    FtsCandidate,
    FtsQuery,
    IdempotentWrite,
    StoredVersion,
    Tombstone,
    TombstoneQuery,
    Vector,
    VectorCandidate,
    VectorQuery,
    VersionPage,
)
from powercontext.storage.common import query_array, unit_vectors, validate_plan
from powercontext.storage.filter_sql import filter_sql
from powercontext.storage.postgres import erasure, fts_search, reads, vectors, writes
from powercontext.storage.postgres.connection import PostgresOptions
from powercontext.storage.postgres.errors import is_unique_violation
from powercontext.storage.postgres.pool import BoundedHints, Pool, borrow, open_pool, upgrade

__all__ = ["PostgresMemoryStore", "upgrade"]


class PostgresMemoryStore:
    """Durable, revisioned Memory in PostgreSQL. Open with `await open(url)`."""

    def __init__(self, pool: Pool, options: PostgresOptions | None = None) -> None:
        self._pool = pool
        self.options = options or PostgresOptions()
        self._indexed: dict[str, int] = {}
        self._casts = vectors.IndexCasts()
        self._deferred: set[str] = set()  # profiles whose index waits for the end of a bulk load
        self._dimensions: BoundedHints[int] = BoundedHints()
        # (scope, profile) -> (deletions, revision): every version active at that revision had
        # a vector while the scope's vector deletion count (scopes.vector_deletions) was
        # `deletions`. Only an erasure deletes vectors of stored versions (delete_vectors), in
        # any process: each count reads the counter in the same statement, and drops the hint
        # once it moved.
        self._embedded_through: BoundedHints[tuple[int, int]] = BoundedHints()
        # (scope, profile) -> (deletions, key): every version active at the head below the key
        # had a vector at that deletion count. A scope's keys are drawn under its commit lock,
        # so later versions get larger keys; this is what lets `reindex` page through a
        # million versions without rescanning.
        self._missing_from: BoundedHints[tuple[int, int]] = BoundedHints()

    @classmethod
    async def open(cls, url: str, *, options: PostgresOptions | None = None) -> PostgresMemoryStore:
        """Connect, apply pending migrations and open the pool."""
        pool, chosen = await open_pool(url, options)
        return cls(pool, chosen)

    async def __aenter__(self) -> PostgresMemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _connection(self, doing: str) -> AbstractAsyncContextManager[AsyncConnection[TupleRow]]:
        return borrow(self._pool, doing)

    async def head(self, scope_id: str) -> int | None:
        async with self._connection("reading the head") as conn:
            return await reads.head(conn, scope_id)

    async def commit(self, request: CommitRequest) -> CommitResult:
        planned = list(request.changes)
        validate_plan(planned)
        async with self._connection(f"committing {len(planned)} changes") as conn:
            try:
                return await writes.commit(
                    conn, request.scope_id, request.expected_head, planned, request.idempotency
                )
            except psycopg.Error as exc:
                if not is_unique_violation(exc):
                    raise
                raise RevisionConflictError(
                    f"a new entry version collides with a stored one ({exc.sqlstate})",
                    expected=request.expected_head or None,
                    actual=None,
                ) from exc

    async def latest_version(self, scope_id: str, entry_id: str) -> StoredVersion | None:
        async with self._connection("reading an entry") as conn:
            return await reads.one_version(
                conn,
                "scope_id = %s AND entry_id = %s ORDER BY version DESC LIMIT 1",
                (scope_id, entry_id),
            )

    async def entry_heads(
        self, scope_id: str, entry_ids: Sequence[str]
    ) -> dict[str, StoredVersion]:
        async with self._connection("reading entries") as conn:
            return await reads.entry_heads(conn, scope_id, entry_ids)

    async def idempotent_write(self, scope_id: str, key: str) -> IdempotentWrite | None:
        async with self._connection("reading an idempotency key") as conn:
            return await reads.idempotent_write(conn, scope_id, key)

    async def entry_versions(self, scope_id: str, entry_id: str) -> list[StoredVersion]:
        async with self._connection("reading an entry") as conn:
            return await reads.versions_where(
                conn, "scope_id = %s AND entry_id = %s ORDER BY version", (scope_id, entry_id)
            )

    async def get_version(self, scope_id: str, entry_version_id: str) -> StoredVersion | None:
        async with self._connection("reading an entry version") as conn:
            return await reads.one_version(
                conn, "scope_id = %s AND entry_version_id = %s", (scope_id, entry_version_id)
            )

    async def fetch_versions(self, scope_id: str, keys: Sequence[int]) -> dict[int, StoredVersion]:
        async with self._connection("fetching entry versions") as conn:
            return await reads.fetch_versions(conn, scope_id, keys)

    async def list_versions(self, page: VersionPage) -> list[StoredVersion]:
        async with self._connection("listing entry versions") as conn:
            return await reads.list_versions(conn, page)

    async def changes(
        self, scope_id: str, since_revision: int, *, limit: int
    ) -> list[MemoryChange]:
        async with self._connection("reading changes") as conn:
            return await reads.changes(conn, scope_id, since_revision, limit)

    async def fts_candidates(self, query: FtsQuery) -> list[FtsCandidate]:
        async with self._connection("searching the full-text index") as conn:
            return await fts_search.candidates(conn, query)

    async def _dimension(
        self, conn: AsyncConnection[TupleRow], scope_id: str, profile_id: str
    ) -> int | None:
        known = self._dimensions.get((scope_id, profile_id))
        if known is None:
            known = await vectors.stored_dimension(conn, scope_id, profile_id)
            if known is not None:
                self._dimensions.remember((scope_id, profile_id), known)
        return known

    async def vector_candidates(
        self, query: VectorQuery, *, exact: bool = False
    ) -> list[VectorCandidate]:
        """`exact` compares exhaustively, never through the index (benchmarks, tests)."""
        vector = query_array(query.vector)
        norm = float(np.linalg.norm(vector))
        limit, profile_id = query.limit, query.profile_id
        if limit <= 0:
            return []
        async with self._connection("searching vectors") as conn:
            dimension = await self._dimension(conn, query.scope_id, profile_id)
            if dimension is None:
                return []
            # Checked before the zero test: a query of the wrong dimension is refused whatever
            # its values, as by the embedded store.
            if vector.shape[0] != dimension:
                raise MemoryValidationError(
                    f"query vector has {vector.shape[0]} dimensions; profile {profile_id!r} "
                    f"stores {dimension}"
                )
            if norm == 0.0:
                return []  # a zero vector has no direction: nothing is near it
            active = await reads.active_count(conn, query.scope_id, query.revision)
            if active == 0:
                return []
            # A small revision is compared exhaustively: exact, and as fast as a graph walk.
            exact = exact or active <= vectors.EXACT_SCAN_UP_TO
            clause, extra = filter_sql(query.where, "postgres", "e.")
            params = (vector / norm, query.scope_id, query.revision, query.revision, *extra, limit)
            rows = await self._search(
                conn, profile_id, dimension, params, limit, exact, clause, active
            )
            # The graph walk gives up after hnsw.max_scan_tuples; when it comes back short, the
            # revision, scope or request filters starved it: compare exhaustively instead. (How
            # many versions a filter admits is unknown, so a short filtered walk always is.)
            if not exact and len(rows) < (limit if clause else min(limit, active)):
                rows = await self._search(conn, profile_id, dimension, params, limit, True, clause)
        found = [
            VectorCandidate(key=int(key), similarity=0.0 if distance != distance else 1 - distance)
            for key, distance in rows
        ]
        found.sort(key=lambda c: (-c.similarity, c.key))
        return found

    async def _search(
        self,
        conn: AsyncConnection[TupleRow],
        profile_id: str,
        dimension: int,
        params: tuple[object, ...],
        limit: int,
        exact: bool,
        clause: str = "",
        active: int = 0,
    ) -> list[tuple[int, float]]:
        cast = "vector" if exact else await self._casts.get(conn, profile_id)
        statement = vectors.nearest_query(
            profile_id, dimension, exact=exact, clause=clause, cast=cast
        )
        async with conn.transaction():
            if not exact:
                settings = vectors.ann_settings(limit, self.options.hnsw_ef_search, active)
                await conn.execute(vectors.ANN_SETTINGS, settings)
            cur = await conn.execute(statement, params)
            return [(int(row[0]), float(row[1])) for row in await cur.fetchall()]

    async def missing_vector_count(self, scope_id: str, revision: int, profile_id: str) -> int:
        key = (scope_id, profile_id)
        hint = self._embedded_through.get(key)
        # Versions active at a revision >= `through` that were added by `through` were active
        # then, so they have vectors, unless one was deleted since (the deletion count moved).
        usable = hint if hint is not None and revision >= hint[1] else None
        async with self._connection("counting missing vectors") as conn:
            missing, exists, deletions = await reads.missing_vectors(
                conn, scope_id, revision, profile_id, usable
            )
        if missing == 0 and exists:
            through = usable[1] if usable is not None and usable[0] == deletions else 0
            self._embedded_through.remember(key, (deletions, max(revision, through)))
        return missing

    async def versions_missing_vectors(
        self, scope_id: str, profile_id: str, *, limit: int
    ) -> list[StoredVersion]:
        key = (scope_id, profile_id)
        async with self._connection("listing versions without vectors") as conn:
            deletions = await reads.vector_deletions(conn, scope_id)
            hint = self._missing_from.get(key)
            start = hint[1] if hint is not None and hint[0] == deletions else 0
            found = await reads.versions_missing_vectors(conn, scope_id, profile_id, start, limit)
        if found:
            self._missing_from.remember(key, (deletions, found[0].key))
        return found

    async def thread_tail(
        self, scope_id: str, thread: str, *, limit: int, before_key: int | None = None
    ) -> list[StoredVersion]:
        async with self._connection("reading a thread") as conn:
            return await reads.thread_tail(conn, scope_id, thread, limit, before_key)

    async def removed_versions(
        self, scope_id: str, *, threads: Sequence[str] | None, batches: Sequence[int] | None
    ) -> list[StoredVersion]:
        async with self._connection("reading the removed versions of index sequences") as conn:
            return await erasure.removed_versions(conn, scope_id, threads, batches)

    async def erased_since(self, scope_id: str, revision: int) -> bool:
        async with self._connection("reading the scope's erasures") as conn:
            return await erasure.erased_since(conn, scope_id, revision)

    async def delete_vectors(
        self, scope_id: str, keys: Sequence[int], *, keep_profile: str | None = None
    ) -> None:
        if not keys:
            return
        async with self._connection(f"deleting the vectors of {len(keys)} versions") as conn:
            await erasure.delete_vectors(conn, scope_id, keys, keep_profile)

    async def rewrite_index_tokens(self, scope_id: str, items: Sequence[tuple[int, str]]) -> None:
        if not items:
            return
        async with self._connection(f"rewriting the tokens of {len(items)} versions") as conn:
            await writes.rewrite_tokens(conn, scope_id, items)

    async def index_profile(self, scope_id: str) -> str | None:
        async with self._connection("reading the index profile") as conn:
            cur = await conn.execute(
                "SELECT profile FROM scope_index_profiles WHERE scope_id = %s", (scope_id,)
            )
            row = await cur.fetchone()
            return str(row[0]) if row else None

    async def index_profiles(self) -> dict[str, str]:
        async with self._connection("reading index profiles") as conn:
            cur = await conn.execute("SELECT scope_id, profile FROM scope_index_profiles")
            return {str(scope): str(profile) for scope, profile in await cur.fetchall()}

    async def set_index_profile(self, scope_id: str, profile: str) -> None:
        async with self._connection("recording the index profile") as conn:
            await conn.execute(
                "INSERT INTO scope_index_profiles (scope_id, profile, recorded_at) "
                "VALUES (%s, %s, now()) ON CONFLICT (scope_id) "
                "DO UPDATE SET profile = EXCLUDED.profile, recorded_at = EXCLUDED.recorded_at",
                (scope_id, profile),
            )

    async def put_vectors(
        self, scope_id: str, profile_id: str, items: Sequence[tuple[int, Vector]]
    ) -> None:
        if not items:
            return
        dimension, rows = unit_vectors(items)
        # One lock order for every writer: two calls upserting overlapping keys in opposite
        # orders (two backfills) deadlock, and the server rolls one of them back (40P01).
        rows = sorted(dict(rows).items(), key=lambda row: row[0])
        async with self._connection(f"storing {len(rows)} vectors") as conn:
            indexed = self._indexed.get(profile_id)
            if indexed is None and profile_id in self._deferred:
                indexed = dimension
            elif indexed is None:
                indexed = await vectors.ensure_index(conn, profile_id, dimension)
                self._indexed[profile_id] = indexed
            stored = await self._dimension(conn, scope_id, profile_id)
            expected = stored if stored is not None else indexed
            if dimension != expected:
                raise MemoryValidationError(
                    f"profile {profile_id!r} stores {expected}-dimensional vectors; got {dimension}"
                )
            wanted = sorted({key for key, _ in rows})
            cur = await conn.execute(
                "SELECT key FROM entry_versions WHERE scope_id = %s AND key = ANY(%s::bigint[])",
                (scope_id, wanted),
            )
            known = {int(row[0]) for row in await cur.fetchall()}
            missing = [key for key in wanted if key not in known]
            if missing:
                raise NotFoundError(
                    f"scope {scope_id!r} has no entry versions with keys {missing[:5]}"
                )
            async with conn.transaction():
                await conn.cursor().executemany(
                    "INSERT INTO entry_vectors (scope_id, profile_id, key, embedding) "
                    "VALUES (%s, %s, %s, %b) ON CONFLICT (scope_id, profile_id, key) "
                    "DO UPDATE SET embedding = EXCLUDED.embedding",
                    [(scope_id, profile_id, key, vector) for key, vector in rows],
                )

    async def defer_vector_index(self, profile_id: str) -> None:
        """Bulk load: drop the profile's HNSW index, and create none while storing its vectors
        from this store, until `build_vector_index`. One graph built over every vector at once
        is several times cheaper than growing it per insert. Meanwhile searches of the profile
        compare exhaustively; another process storing vectors would create the index again."""
        self._deferred.add(profile_id)
        self._indexed.pop(profile_id, None)
        self._casts.forget(profile_id)
        async with self._connection("dropping a vector index") as conn:
            await vectors.drop_index(conn, profile_id)

    async def build_vector_index(self, profile_id: str, dimension: int) -> None:
        """Build the profile's HNSW index over the stored vectors (see defer_vector_index)."""
        async with self._connection("building a vector index") as conn:
            self._indexed[profile_id] = await vectors.ensure_index(conn, profile_id, dimension)
        self._deferred.discard(profile_id)
        self._casts.forget(profile_id)

    async def erase(self, request: ErasureRequest) -> ErasureResult:
        async with self._connection("erasing entries") as conn:
            return await erasure.erase(conn, request)

    async def scrub(self, scope_id: str) -> None:
        """Drop the term rows the erased words left at zero once their neighbours were
        re-derived; the dead row versions are VACUUM's, the operator's
        (storage.postgres.erasure)."""
        async with self._connection("scrubbing an erasure") as conn:
            await erasure.scrub(conn, scope_id)

    async def tombstones(self, query: TombstoneQuery) -> list[Tombstone]:
        async with self._connection("reading tombstones") as conn:
            return await erasure.tombstones(conn, query)

    async def active_count(self, scope_id: str, revision: int) -> int:
        async with self._connection("counting entries") as conn:
            return await reads.active_count(conn, scope_id, revision)

    async def scope_ids(self) -> list[str]:
        async with self._connection("listing scopes") as conn:
            return await reads.scope_ids(conn)

    async def close(self) -> None:
        await self._pool.close()
