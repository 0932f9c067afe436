"""Database URLs, pool options and opening connections.

A URL is a libpq URI (`postgresql://user:password@host:5432/dbname?sslmode=require`, or a unix
socket with `?host=/run/postgresql`). Store options may ride along as query parameters that
are removed before libpq sees them: `pool_min_size` (default 1), `pool_max_size` (default 8)
and `hnsw_ef_search` (default max(256, 8 x the rows asked for), wider past 200,000 active
versions, at most 1000: vectors.ef_search).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from powercontext.memory.errors import ConfigurationError
from powercontext.storage.postgres.errors import storage_error

URL_VARIABLE = "POWERCONTEXT_SERVER_DATABASE_URL"
_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


@dataclass(frozen=True, slots=True)
class PostgresOptions:
    min_size: int = 1
    max_size: int = 8
    timeout_seconds: float = 30.0
    """How long opening, or waiting for a free connection, may take before a StorageError."""
    hnsw_ef_search: int | None = None
    """HNSW candidate list size; None: max(256, 8 * limit) (see vectors.ef_search)."""


def _size(name: str, value: str) -> int:
    try:
        size = int(value)
    except ValueError:
        size = 0
    if size < 1:
        raise ConfigurationError(f"{URL_VARIABLE}: {name} must be a positive integer")
    return size


def split_url(url: str, options: PostgresOptions | None = None) -> tuple[str, PostgresOptions]:
    """(libpq conninfo, store options) of a PowerContext database URL."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise ConfigurationError(f"{URL_VARIABLE}: {parts.scheme!r} is not a PostgreSQL URL")
    chosen = options or PostgresOptions()
    kept: list[tuple[str, str]] = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == "pool_min_size":
            chosen = replace(chosen, min_size=_size(name, value))
        elif name == "pool_max_size":
            chosen = replace(chosen, max_size=_size(name, value))
        elif name == "hnsw_ef_search":
            chosen = replace(chosen, hnsw_ef_search=_size(name, value))
        else:
            kept.append((name, value))
    if chosen.min_size > chosen.max_size:
        raise ConfigurationError(f"{URL_VARIABLE}: pool_min_size exceeds pool_max_size")
    # Not urlunsplit: it drops the `//` of an empty host (`postgresql:///db?host=/run/...`,
    # the unix socket form), and libpq then reads the rest as a key=value string. Spaces as
    # %20: libpq reads a `+` literally (`options=-ca=1 -cb=2` would set a to `1+-cb=2`).
    query = urlencode(kept, quote_via=quote)
    conninfo = f"postgresql://{parts.netloc}{parts.path}" + (f"?{query}" if query else "")
    return conninfo, chosen


def redact(conninfo: str) -> str:
    """The URL without its password (in the user part or a `password=` parameter), for
    messages and logs."""
    parts = urlsplit(conninfo)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    query = "&".join(
        f"{name}=***" if name.lower() == "password" else item
        for item in parts.query.split("&")
        if item
        for name in [item.split("=", 1)[0]]
    )
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


async def connect(conninfo: str, timeout_seconds: float) -> AsyncConnection[TupleRow]:
    """One autocommit connection (migrations, `db upgrade`), errors as StorageError."""
    try:
        return await AsyncConnection.connect(
            conninfo, autocommit=True, connect_timeout=max(1, int(timeout_seconds))
        )
    except psycopg.Error as exc:
        raise storage_error(exc, f"connecting to {redact(conninfo)}") from exc


async def one_row(
    conn: AsyncConnection[TupleRow], statement: str, params: Sequence[object] = ()
) -> TupleRow | None:
    """The first row `statement` returns, or None when it returns none."""
    cur = await conn.execute(statement, params)
    return await cur.fetchone()
