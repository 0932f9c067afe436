"""The connection pool's lifecycle: migrate then open, lend connections, recover after failover.

One psycopg AsyncConnectionPool per store (autocommit; explicit transactions where a call needs
one), so the event loop never blocks on the database. No statement is prepared server-side:
plans are made with the actual scope and revision, which is what lets the planner choose
between HNSW and an exact scan per scope (and keeps the store usable behind a
transaction-pooling PgBouncer).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TypeVar

import numpy as np
import psycopg
from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from powercontext.storage.postgres import vectors
from powercontext.storage.postgres.connection import PostgresOptions, connect, redact, split_url
from powercontext.storage.postgres.errors import storage_error
from powercontext.storage.postgres.schema import migrate

Pool = AsyncConnectionPool[AsyncConnection[TupleRow]]

_CACHE_LIMIT = 4096


V = TypeVar("V")


class BoundedHints(OrderedDict[tuple[str, str], V]):
    """A small LRU map; what it holds is a hint that is re-derived when evicted."""

    def remember(self, key: tuple[str, str], value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > _CACHE_LIMIT:
            self.popitem(last=False)


async def upgrade(url: str) -> list[int]:
    """Apply pending schema migrations (`powercontext db upgrade`); the versions applied."""
    conninfo, options = split_url(url)
    conn = await connect(conninfo, options.timeout_seconds)
    try:
        return await migrate(conn, redact(conninfo))
    except psycopg.Error as exc:
        raise storage_error(exc, f"migrating the schema of {redact(conninfo)}") from exc
    finally:
        await conn.close()


async def open_pool(url: str, options: PostgresOptions | None) -> tuple[Pool, PostgresOptions]:
    """Connect, apply pending migrations and open the pool; the pool and the options chosen."""
    conninfo, chosen = split_url(url, options)
    conn = await connect(conninfo, chosen.timeout_seconds)
    try:
        await migrate(conn, redact(conninfo))
        oid = await vectors.vector_oid(conn)
    except psycopg.Error as exc:
        raise storage_error(exc, f"migrating the schema of {redact(conninfo)}") from exc
    finally:
        await conn.close()
    dumper = vectors.dumper_for(oid)

    async def configure(new: AsyncConnection[TupleRow]) -> None:
        new.adapters.register_dumper(np.ndarray, dumper)
        await new.execute("SET TIME ZONE 'UTC'")

    pool: Pool = AsyncConnectionPool(
        conninfo,
        min_size=chosen.min_size,
        max_size=chosen.max_size,
        timeout=chosen.timeout_seconds,
        kwargs={"autocommit": True, "prepare_threshold": None},
        configure=configure,
        open=False,
        name="powercontext",
    )
    try:
        await pool.open(wait=True, timeout=chosen.timeout_seconds)
    except psycopg.Error as exc:
        await pool.close()
        raise storage_error(exc, f"opening the connection pool to {redact(conninfo)}") from exc
    return pool, chosen


@asynccontextmanager
async def borrow(pool: Pool, doing: str) -> AsyncIterator[AsyncConnection[TupleRow]]:
    """A pooled connection; a psycopg error becomes a StorageError saying what was `doing`."""
    lost = False
    try:
        async with pool.connection() as conn:
            try:
                yield conn
            except psycopg.Error:
                lost = conn.broken or conn.closed
                raise
    except psycopg.Error as exc:
        if lost:
            # After a restart or failover every idle pooled connection is dead, and the
            # pool finds out only by lending each one: without this check the next
            # pool_max_size operations would all fail although the server is back.
            with suppress(psycopg.Error):
                await pool.check()
        raise storage_error(exc, doing) from exc
