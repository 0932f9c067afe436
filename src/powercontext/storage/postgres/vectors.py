"""The vector channel: pgvector's binary wire format, per-profile HNSW indexes, the queries.

One `entry_vectors` table holds every profile's vectors in a `vector` column without a
dimension. Each profile gets a partial expression index

    CREATE INDEX entry_vectors_hnsw_<hash> ON entry_vectors
    USING hnsw ((embedding::halfvec(d)) halfvec_cosine_ops) WHERE profile_id = '<profile>'

created the first time vectors of that profile are stored. The cast gives the index its
dimension and makes an insert of another dimension fail; the predicate keeps stale profiles
out of the graph. Half precision halves the graph (1.1 GB against 2.0 GB for a million
384-d vectors), so it stays in the buffers beside the full-text index; the walk's rows are
scored again in full precision, so the similarities returned are exact. An index built
before, on `embedding::vector(d)`, is walked with that cast until it is rebuilt. Queries
spell the same cast and predicate (as literals, so the planner can prove the partial index
applies) and let the planner choose between the HNSW graph and an exact scan of the scope.
pgvector indexes at most 2000 dimensions: larger profiles are searched exactly, and so are
revisions of at most EXACT_SCAN_UP_TO active versions (an exact scan of 2000 vectors takes
about as long as a graph walk and never misses).
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
import time
from typing import Any

import numpy as np
from psycopg import AsyncConnection, errors, sql
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import TupleRow

from powercontext.storage.filter_sql import active_at
from powercontext.storage.postgres.connection import one_row

HNSW_MAX_DIMENSION = 2000
EXACT_SCAN_UP_TO = 2000
"""Revisions with at most this many active versions are searched exactly, not by HNSW."""
_CAST_IN_INDEX = re.compile(r"::(vector|halfvec)\((\d+)\)")
INDEX_CAST = "halfvec"
"""The type new graphs index (see the module's docstring); older ones may be `vector`."""


class VectorBinaryDumper(Dumper):
    """numpy array -> pgvector's binary input: int16 dimension, int16 unused, float4 values
    in network byte order. `oid` is set per database (see dumper_for)."""

    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        array = np.asarray(obj, dtype=">f4").reshape(-1)
        return struct.pack(">HH", array.shape[0], 0) + array.tobytes()


def dumper_for(oid: int) -> type[VectorBinaryDumper]:
    return type("PgVectorDumper", (VectorBinaryDumper,), {"oid": oid})


async def vector_oid(conn: AsyncConnection[TupleRow]) -> int:
    row = await one_row(conn, "SELECT 'vector'::regtype::oid")
    assert row is not None
    return int(row[0])


def index_name(profile_id: str) -> str:
    digest = hashlib.sha256(profile_id.encode("utf-8")).hexdigest()[:24]
    return f"entry_vectors_hnsw_{digest}"


async def indexed_cast(conn: AsyncConnection[TupleRow], profile_id: str) -> tuple[str, int] | None:
    """The type and dimension the profile's HNSW index casts to; None without one."""
    row = await one_row(conn, "SELECT pg_get_indexdef(to_regclass(%s))", (index_name(profile_id),))
    if row is None or row[0] is None:
        return None
    match = _CAST_IN_INDEX.search(str(row[0]))
    return (match.group(1), int(match.group(2))) if match else None


class IndexCasts:
    """The cast each profile's index is walked with, read from the catalog at most once per
    `ttl` seconds: an index another process rebuilt (a bulk load) is walked again within it."""

    def __init__(self, ttl: float = 60.0) -> None:
        self._ttl = ttl
        self._seen: dict[str, tuple[str, float]] = {}

    async def get(self, conn: AsyncConnection[TupleRow], profile_id: str) -> str:
        now = time.monotonic()
        seen = self._seen.get(profile_id)
        if seen is not None and now - seen[1] < self._ttl:
            return seen[0]
        found = await indexed_cast(conn, profile_id)
        if found is None:  # no graph to walk: the planner compares exactly whatever the cast
            return INDEX_CAST
        self._seen[profile_id] = (found[0], now)
        return found[0]

    def forget(self, profile_id: str) -> None:
        self._seen.pop(profile_id, None)


async def indexed_dimension(conn: AsyncConnection[TupleRow], profile_id: str) -> int | None:
    found = await indexed_cast(conn, profile_id)
    return None if found is None else found[1]


async def ensure_index(conn: AsyncConnection[TupleRow], profile_id: str, dimension: int) -> int:
    """The dimension of the profile's HNSW index, creating the index when it is missing.
    Runs in its own transaction; an empty index builds instantly and then grows per insert."""
    if dimension > HNSW_MAX_DIMENSION:
        return dimension
    found = await indexed_dimension(conn, profile_id)
    if found is not None:
        return found
    try:
        async with conn.transaction():
            # A table lock (not an advisory one) so that, once granted, this backend has seen
            # the catalog change of a concurrent creator: the re-check below then finds it.
            await conn.execute("LOCK TABLE entry_vectors IN SHARE ROW EXCLUSIVE MODE")
            found = await indexed_dimension(conn, profile_id)
            if found is not None:
                return found
            await conn.execute(
                sql.SQL(
                    "CREATE INDEX {name} ON entry_vectors USING hnsw "
                    "((embedding::{cast}({dimension})) {cast}_cosine_ops) "
                    "WHERE profile_id = {profile}"
                ).format(
                    name=sql.Identifier(index_name(profile_id)),
                    cast=sql.SQL(INDEX_CAST),
                    dimension=sql.Literal(dimension),
                    profile=sql.Literal(profile_id),
                )
            )
    except errors.DuplicateTable:  # created by another process after all
        found = await indexed_dimension(conn, profile_id)
        return dimension if found is None else found
    return dimension


async def drop_index(conn: AsyncConnection[TupleRow], profile_id: str) -> None:
    await conn.execute(
        sql.SQL("DROP INDEX IF EXISTS {name}").format(name=sql.Identifier(index_name(profile_id)))
    )


async def stored_dimension(
    conn: AsyncConnection[TupleRow], scope_id: str, profile_id: str
) -> int | None:
    row = await one_row(
        conn,
        "SELECT vector_dims(embedding) FROM entry_vectors "
        "WHERE scope_id = %s AND profile_id = %s LIMIT 1",
        (scope_id, profile_id),
    )
    return int(row[0]) if row else None


_ACTIVE = active_at("postgres", "e.")


def nearest_query(
    profile_id: str, dimension: int, *, exact: bool, clause: str = "", cast: str = "vector"
) -> sql.Composed:
    """Nearest active versions by cosine distance. The approximate form orders by the indexed
    expression, `cast` as the profile's index has it (so the planner may walk the HNSW graph);
    the exact form orders by the bare column, which no index serves, so every vector of the
    scope is compared. The query vector is the first parameter either way."""
    where = sql.SQL(
        "FROM entry_vectors v "
        "JOIN entry_versions e ON e.scope_id = v.scope_id AND e.key = v.key "
        "WHERE v.scope_id = %s AND v.profile_id = {profile} AND " + _ACTIVE + "{clause} "
    ).format(profile=sql.Literal(profile_id), clause=sql.SQL(clause))
    if exact:
        # As the embedded store ranks: a zero vector (distance NaN, which sorts after every
        # number) has similarity 0, and ties at the LIMIT keep the smaller keys.
        return sql.SQL(
            "SELECT v.key, COALESCE(NULLIF(v.embedding <=> %b, 'NaN'), 1) AS distance "
            "{where}ORDER BY distance, v.key LIMIT %s"
        ).format(where=where)
    if cast == "vector":
        return sql.SQL(
            "SELECT v.key, v.embedding::vector({d}) <=> %b AS distance {where}"
            "ORDER BY distance LIMIT %s"
        ).format(d=sql.Literal(dimension), where=where)
    # The walk orders by the half-precision distance; the rows it returns are scored again in
    # full. The query vector comes once, through a scalar subquery the index scan can take.
    return sql.SQL(
        "WITH q AS MATERIALIZED (SELECT %b::vector AS target) "
        "SELECT key, embedding <=> (SELECT target FROM q) AS distance FROM ("
        "SELECT v.key, v.embedding {where}"
        "ORDER BY v.embedding::{cast}({d}) <=> (SELECT target::{cast}({d}) FROM q) LIMIT %s"
        ") walked"
    ).format(where=where, cast=sql.SQL(cast), d=sql.Literal(dimension))


GRAPH_GROWTH_FROM = 200_000
"""Revisions larger than this walk the graph with a wider candidate list (see ef_search)."""


def ef_search(limit: int, configured: int | None = None, active: int = 0) -> int:
    """Candidate list size of the HNSW search, within pgvector's bound of 1000: eight times the
    rows wanted, at least 256 (the embedded store's default too), unless configured. On dense
    sentence-like vectors at 100k entries (docs/postgres.md), recall@30 was 0.92 at ef 120
    (the earlier 4 x limit) and 0.96 at 256, for about 4 ms more; pgvector's 40 suits LIMIT 10.
    A larger graph needs a wider list for the same recall (at 1M, 256 gave 0.909 and 512 0.950),
    so past GRAPH_GROWTH_FROM active versions the floor of 256 grows with the square root of the
    size (573 at a million); eight times the rows wanted already makes a wide list."""
    if configured is not None:
        return min(1000, max(configured, limit))
    floor = 256
    if active > GRAPH_GROWTH_FROM:
        floor = math.ceil(floor * math.sqrt(active / GRAPH_GROWTH_FROM))
    return min(1000, max(floor, 8 * limit))


# Transaction-local settings of a graph walk. relaxed_order: keep walking until LIMIT rows pass
# the scope and revision filters (the few rows out of order are re-sorted by the caller).
# enable_sort off: the store has already decided this revision is large enough for the graph,
# and must not be overruled by row estimates that are stale right after a bulk load.
ANN_SETTINGS = (
    "SELECT set_config('hnsw.ef_search', %s, true), "
    "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('enable_sort', 'off', true)"
)


def ann_settings(limit: int, configured: int | None = None, active: int = 0) -> tuple[str]:
    return (str(ef_search(limit, configured, active)),)
