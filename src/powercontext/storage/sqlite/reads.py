"""Read queries. Each runs inside one read transaction, so it sees one committed snapshot."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from powercontext.memory.models import MemoryChange
from powercontext.memory.ports import (
    FtsCandidate,
    FtsQuery,
    IdempotentWrite,
    RevisionQuery,
    StoredVersion,
    VersionPage,
)
from powercontext.storage.common import (
    CHANGE_COLUMNS,
    NO_KEY,
    VERSION_COLUMNS,
    change_from_row,
    findable,
    idempotency_query,
    idempotent_write_from_row,
    page_query,
    version_from_row,
    whole_revisions,
)
from powercontext.storage.filter_sql import active_at, filter_sql
from powercontext.storage.sqlite.writes import chunks

_ACTIVE_AT = active_at("sqlite")


def _version(row: Sequence[Any]) -> StoredVersion:
    return version_from_row(row, metadata=json.loads, created_at=datetime.fromisoformat)


def head(conn: sqlite3.Connection, scope_id: str) -> int | None:
    row = conn.execute(
        "SELECT head_revision FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    return int(row[0]) if row else None


def head_and_erasures(conn: sqlite3.Connection, scope_id: str) -> tuple[int, int]:
    """A scope's head revision and erasure count (both 0 for a scope never written): what an
    in-memory index compares with what it last saw."""
    row = conn.execute(
        "SELECT head_revision, erasures FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def active_count(conn: sqlite3.Connection, scope_id: str, revision: int) -> int:
    row = conn.execute(
        "SELECT active_count FROM revisions WHERE scope_id = ? AND revision = ?",
        (scope_id, revision),
    ).fetchone()
    return int(row[0]) if row else 0


def latest_version(conn: sqlite3.Connection, scope_id: str, entry_id: str) -> StoredVersion | None:
    if not findable((scope_id, entry_id)):
        return None
    row = conn.execute(
        f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = ? AND entry_id = ? "
        "ORDER BY version DESC LIMIT 1",
        (scope_id, entry_id),
    ).fetchone()
    return _version(row) if row else None


def entry_versions(conn: sqlite3.Connection, scope_id: str, entry_id: str) -> list[StoredVersion]:
    if not findable((scope_id, entry_id)):
        return []
    rows = conn.execute(
        f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = ? AND entry_id = ? "
        "ORDER BY version",
        (scope_id, entry_id),
    ).fetchall()
    return [_version(row) for row in rows]


def idempotent_write(conn: sqlite3.Connection, scope_id: str, key: str) -> IdempotentWrite | None:
    if not findable((scope_id, key)):
        return None
    row = conn.execute(*idempotency_query(scope_id, key, "sqlite")).fetchone()
    return idempotent_write_from_row(row, keys=json.loads)


def get_version(
    conn: sqlite3.Connection, scope_id: str, entry_version_id: str
) -> StoredVersion | None:
    if not findable((scope_id, entry_version_id)):
        return None
    row = conn.execute(
        f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = ? AND entry_version_id = ?",
        (scope_id, entry_version_id),
    ).fetchone()
    return _version(row) if row else None


def fetch_versions(
    conn: sqlite3.Connection, scope_id: str, keys: Sequence[int]
) -> dict[int, StoredVersion]:
    found: dict[int, StoredVersion] = {}
    for part in chunks(sorted({int(key) for key in keys})):
        marks = ",".join("?" * len(part))
        for row in conn.execute(
            f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = ? AND key IN ({marks})",
            (scope_id, *part),
        ):
            version = _version(row)
            found[version.key] = version
    return found


def entry_heads(
    conn: sqlite3.Connection, scope_id: str, entry_ids: Sequence[str]
) -> dict[str, StoredVersion]:
    found: dict[str, StoredVersion] = {}
    if not findable((scope_id,)):
        return found
    for part in chunks(sorted({entry_id for entry_id in entry_ids if findable((entry_id,))})):
        marks = ",".join("?" * len(part))
        for row in conn.execute(
            f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = ? "
            f"AND entry_id IN ({marks}) ORDER BY version",
            (scope_id, *part),
        ):
            version = _version(row)
            found[version.entry_id] = version  # ascending: the last one wins
    return found


def list_versions(conn: sqlite3.Connection, page: VersionPage) -> list[StoredVersion]:
    if page.limit <= 0:
        return []
    return [_version(row) for row in conn.execute(*page_query(page, "sqlite")).fetchall()]


def filtered_keys(conn: sqlite3.Connection, query: RevisionQuery) -> npt.NDArray[np.int64] | None:
    """Keys of the versions active at the query's revision that match its filter, ascending;
    None when there is no filter (every active version may be a candidate)."""
    clause, params = filter_sql(query.where, "sqlite")
    if not clause:
        return None
    rows = conn.execute(
        f"SELECT key FROM entry_versions WHERE scope_id = ? AND {_ACTIVE_AT}{clause} ORDER BY key",
        (query.scope_id, query.revision, query.revision, *params),
    ).fetchall()
    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))


def changes(
    conn: sqlite3.Connection, scope_id: str, since_revision: int, limit: int
) -> list[MemoryChange]:
    """Changes of revisions after `since_revision`, in order, whole revisions only.

    A page never splits a revision (a reader resumes from the last revision it saw); when the
    first revision alone has more than `limit` changes, the page holds all of them.
    """
    select = f"SELECT {CHANGE_COLUMNS} FROM changes WHERE scope_id = ? "
    rows, whole = whole_revisions(
        conn.execute(
            select + "AND revision > ? ORDER BY revision, seq LIMIT ?",
            (scope_id, since_revision, max(limit, 1) + 1),
        ).fetchall(),
        limit,
    )
    if whole is not None:
        rows = conn.execute(select + "AND revision = ? ORDER BY seq", (scope_id, whole)).fetchall()
    return [change_from_row(row, created_at=datetime.fromisoformat) for row in rows]


def _match_expression(terms: Sequence[str]) -> str | None:
    """Each term becomes one quoted FTS5 string; user text never reaches FTS5 syntax."""
    quoted = []
    for term in dict.fromkeys(terms):
        cleaned = term.replace("\x00", "").strip()
        if cleaned:
            quoted.append('"' + cleaned.replace('"', '""') + '"')
    if not quoted:
        return None
    return f"tokens : ({' OR '.join(quoted)})"


def fts5_candidates(conn: sqlite3.Connection, query: FtsQuery) -> list[FtsCandidate]:
    """The SQL-only full-text channel (IndexOptions.fulltext = "fts5"), kept for comparison.

    The join filters by scope; a `scope_tag : "s<key>"` clause in MATCH made FTS5 walk every
    row of the scope as well and doubled the time at 10k entries, so it is not used.
    """
    if query.limit <= 0:
        return []
    expression = _match_expression(query.terms)
    if expression is None:
        return []
    clause, params = filter_sql(query.where, "sqlite", "v.")
    rows = conn.execute(
        "SELECT f.rowid, bm25(entry_fts, 0.0, 1.0) AS score, f.tokens "
        "FROM entry_fts f JOIN entry_versions v ON v.key = f.rowid "
        "WHERE entry_fts MATCH ? AND v.scope_id = ? AND v.added_revision <= ? "
        f"AND (v.removed_revision IS NULL OR v.removed_revision > ?){clause} "
        "ORDER BY score, f.rowid LIMIT ?",
        (expression, query.scope_id, query.revision, query.revision, *params, query.limit),
    ).fetchall()
    # bm25() is lower-is-better; negate it so a higher score means a better candidate.
    return [
        FtsCandidate(key=int(key), score=-float(score), tokens=frozenset(tokens.split()))
        for key, score, tokens in rows
    ]


def thread_tail(
    conn: sqlite3.Connection, scope_id: str, thread: str, limit: int, before_key: int | None
) -> list[StoredVersion]:
    # Without a bound, below NO_KEY: one statement, one plan (the thread index).
    rows = _limited_versions(
        conn,
        f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = ? AND thread = ? "
        "AND version = 1 AND removed_revision IS NULL AND key < ? ORDER BY key DESC LIMIT ?",
        (scope_id, thread, NO_KEY if before_key is None else before_key),
        limit,
    )
    return rows[::-1]


def versions_missing_vectors(
    conn: sqlite3.Connection, scope_id: str, profile_id: str, limit: int
) -> list[StoredVersion]:
    return _limited_versions(
        conn,
        f"SELECT {VERSION_COLUMNS} FROM entry_versions v WHERE v.scope_id = ? "
        "AND v.removed_revision IS NULL AND NOT EXISTS (SELECT 1 FROM entry_vectors e "
        "WHERE e.scope_id = v.scope_id AND e.profile_id = ? AND e.key = v.key) "
        "ORDER BY v.key LIMIT ?",
        (scope_id, profile_id),
        limit,
    )


def _limited_versions(
    conn: sqlite3.Connection, sql: str, params: tuple[Any, ...], limit: int
) -> list[StoredVersion]:
    """Runs a query whose last parameter is its LIMIT; no rows at all for a limit below 1."""
    if limit <= 0:
        return []
    return [_version(row) for row in conn.execute(sql, (*params, limit)).fetchall()]


def scope_ids(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT scope_id FROM scopes ORDER BY scope_id")]
