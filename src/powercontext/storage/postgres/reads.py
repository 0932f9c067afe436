"""Read queries. Revisions and versions are immutable, so each read of one exact revision
gives the same answer in any snapshot; only `removed_revision` and vectors are ever added."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from powercontext.memory.models import MemoryChange
from powercontext.memory.ports import IdempotentWrite, StoredVersion, VersionPage
from powercontext.storage import common
from powercontext.storage.common import (
    CHANGE_COLUMNS,
    NO_KEY,
    VERSION_COLUMNS,
    change_from_row,
    idempotency_query,
    idempotent_write_from_row,
    page_query,
    version_from_row,
    whole_revisions,
)
from powercontext.storage.filter_sql import active_at
from powercontext.storage.postgres.connection import one_row

ACTIVE_AT = active_at("postgres")


async def head(conn: AsyncConnection[TupleRow], scope_id: str) -> int | None:
    row = await one_row(conn, "SELECT head_revision FROM scopes WHERE scope_id = %s", (scope_id,))
    return int(row[0]) if row else None


async def active_count(conn: AsyncConnection[TupleRow], scope_id: str, revision: int) -> int:
    row = await one_row(
        conn,
        "SELECT active_count FROM revisions WHERE scope_id = %s AND revision = %s",
        (scope_id, revision),
    )
    return int(row[0]) if row else 0


def findable(params: Sequence[object]) -> bool:
    """Whether a lookup by these values can find a row. PostgreSQL text cannot hold NUL, so no
    stored id has one and the driver refuses to send one: such a lookup finds nothing, as it
    does on SQLite, rather than failing as a storage error. Likewise a lone surrogate."""
    return common.findable(params) and not any(
        isinstance(value, str) and "\x00" in value for value in params
    )


async def one_version(
    conn: AsyncConnection[TupleRow], where: str, params: Sequence[object]
) -> StoredVersion | None:
    if not findable(params):
        return None
    row = await one_row(conn, f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE {where}", params)
    return version_from_row(row) if row else None


async def versions_where(
    conn: AsyncConnection[TupleRow], where: str, params: Sequence[object]
) -> list[StoredVersion]:
    if not findable(params):
        return []
    cur = await conn.execute(f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE {where}", params)
    return [version_from_row(row) for row in await cur.fetchall()]


async def idempotent_write(
    conn: AsyncConnection[TupleRow], scope_id: str, key: str
) -> IdempotentWrite | None:
    if not findable((key,)):
        return None
    return idempotent_write_from_row(
        await one_row(conn, *idempotency_query(scope_id, key, "postgres"))
    )


async def _versions_among(
    conn: AsyncConnection[TupleRow], select: str, condition: str, scope_id: str, wanted: list[Any]
) -> list[StoredVersion]:
    """Versions of the scope that `condition` picks by the array `wanted` (none when empty)."""
    if not wanted:
        return []
    cur = await conn.execute(
        f"{select} {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = %s AND {condition}",
        (scope_id, wanted),
    )
    return [version_from_row(row) for row in await cur.fetchall()]


async def fetch_versions(
    conn: AsyncConnection[TupleRow], scope_id: str, keys: Sequence[int]
) -> dict[int, StoredVersion]:
    wanted = sorted({int(key) for key in keys})
    found = await _versions_among(conn, "SELECT", "key = ANY(%s::bigint[])", scope_id, wanted)
    return {version.key: version for version in found}


async def entry_heads(
    conn: AsyncConnection[TupleRow], scope_id: str, entry_ids: Sequence[str]
) -> dict[str, StoredVersion]:
    found = await _versions_among(
        conn,
        "SELECT DISTINCT ON (entry_id)",
        "entry_id = ANY(%s::text[]) ORDER BY entry_id, version DESC",
        scope_id,
        sorted({entry_id for entry_id in entry_ids if findable((entry_id,))}),
    )
    return {version.entry_id: version for version in found}


async def list_versions(conn: AsyncConnection[TupleRow], page: VersionPage) -> list[StoredVersion]:
    if page.limit <= 0:
        return []
    cur = await conn.execute(*page_query(page, "postgres"))
    return [version_from_row(row) for row in await cur.fetchall()]


_CHANGES = f"SELECT {CHANGE_COLUMNS} FROM changes WHERE scope_id = %s "


async def changes(
    conn: AsyncConnection[TupleRow], scope_id: str, since_revision: int, limit: int
) -> list[MemoryChange]:
    """Changes of revisions after `since_revision`, in order, whole revisions only.

    A page never splits a revision (a reader resumes from the last revision it saw); when the
    first revision alone has more than `limit` changes, the page holds all of them.
    """
    cur = await conn.execute(
        _CHANGES + "AND revision > %s ORDER BY revision, seq LIMIT %s",
        (scope_id, since_revision, max(limit, 1) + 1),
    )
    rows, whole = whole_revisions(await cur.fetchall(), limit)
    if whole is not None:
        cur = await conn.execute(_CHANGES + "AND revision = %s ORDER BY seq", (scope_id, whole))
        rows = await cur.fetchall()
    return [change_from_row(row) for row in rows]


async def missing_vectors(
    conn: AsyncConnection[TupleRow],
    scope_id: str,
    revision: int,
    profile_id: str,
    hint: tuple[int, int] | None,
) -> tuple[int, bool, int]:
    """How many versions active at `revision` have no vector of the profile; whether the
    revision exists yet (only then is its active set final); and the scope's vector deletion
    count. `hint` (deletions, through): every version added by revision `through` had its
    vector while the scope's deletion count was `deletions`. While it still is, only versions
    added after `through` are counted. One statement: the count and the counter agree."""
    deletions, through = hint if hint is not None else (-1, 0)
    cur = await conn.execute(
        "SELECT s.vector_deletions, (SELECT count(*) FROM entry_versions e "
        "WHERE e.scope_id = %s AND e.added_revision > "
        "(CASE WHEN s.vector_deletions = %s THEN %s ELSE 0 END) "
        f"AND {ACTIVE_AT} "
        "AND NOT EXISTS (SELECT 1 FROM entry_vectors v "
        "WHERE v.scope_id = e.scope_id AND v.profile_id = %s AND v.key = e.key)), "
        "EXISTS (SELECT 1 FROM revisions WHERE scope_id = %s AND revision = %s) "
        "FROM scopes s WHERE s.scope_id = %s",
        (
            scope_id,
            deletions,
            through,
            revision,
            revision,
            profile_id,
            scope_id,
            revision,
            scope_id,
        ),
    )
    row = await cur.fetchone()
    if row is None:  # no such scope: nothing stored, nothing missing
        return 0, False, 0
    return int(row[1]), bool(row[2]), int(row[0])


async def vector_deletions(conn: AsyncConnection[TupleRow], scope_id: str) -> int:
    """The scope's vector deletion count (0 for a scope not stored)."""
    cur = await conn.execute("SELECT vector_deletions FROM scopes WHERE scope_id = %s", (scope_id,))
    row = await cur.fetchone()
    return int(row[0]) if row is not None else 0


async def versions_missing_vectors(
    conn: AsyncConnection[TupleRow], scope_id: str, profile_id: str, from_key: int, limit: int
) -> list[StoredVersion]:
    if limit <= 0:
        return []
    cur = await conn.execute(
        f"SELECT {VERSION_COLUMNS} FROM entry_versions e WHERE e.scope_id = %s AND e.key >= %s "
        "AND e.removed_revision IS NULL AND NOT EXISTS (SELECT 1 FROM entry_vectors v "
        "WHERE v.scope_id = e.scope_id AND v.profile_id = %s AND v.key = e.key) "
        "ORDER BY e.key LIMIT %s",
        (scope_id, from_key, profile_id, limit),
    )
    return [version_from_row(row) for row in await cur.fetchall()]


async def thread_tail(
    conn: AsyncConnection[TupleRow],
    scope_id: str,
    thread: str,
    limit: int,
    before_key: int | None,
) -> list[StoredVersion]:
    if limit <= 0:
        return []
    # Without a bound, below NO_KEY: one statement, one plan (the thread index).
    cur = await conn.execute(
        f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = %s AND thread = %s "
        "AND version = 1 AND removed_revision IS NULL AND key < %s ORDER BY key DESC LIMIT %s",
        (scope_id, thread, NO_KEY if before_key is None else before_key, limit),
    )
    return [version_from_row(row) for row in reversed(await cur.fetchall())]


async def scope_ids(conn: AsyncConnection[TupleRow]) -> list[str]:
    # Byte order, as the embedded store sorts, whatever the database's collation.
    cur = await conn.execute('SELECT scope_id FROM scopes ORDER BY scope_id COLLATE "C"')
    return [row[0] for row in await cur.fetchall()]
