"""The index profile recorded per scope (MemoryStore.index_profile and its siblings)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def read(conn: sqlite3.Connection, scope_id: str) -> str | None:
    row = conn.execute(
        "SELECT profile FROM scope_index_profiles WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    return str(row[0]) if row else None


def read_all(conn: sqlite3.Connection) -> dict[str, str]:
    rows = conn.execute("SELECT scope_id, profile FROM scope_index_profiles").fetchall()
    return {str(scope): str(profile) for scope, profile in rows}


def recorder(scope_id: str, profile: str, now: str) -> Callable[[sqlite3.Connection], None]:
    """The write that records (or replaces) a scope's profile, for the writer connection."""

    def record(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO scope_index_profiles (scope_id, profile, recorded_at) "
            "VALUES (?, ?, ?)",
            (scope_id, profile, now),
        )

    return record
