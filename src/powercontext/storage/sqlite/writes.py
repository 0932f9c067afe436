"""The write transactions: commit (a compare-and-swap on the scope head) and put_vectors.

Each function runs inside the writer's BEGIN IMMEDIATE transaction. SQLite admits one writer
per database file at a time, across processes, so the head read here cannot move before
COMMIT; the head UPDATE also names the head it read, so the swap is stated in SQL too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime

from powercontext.memory.errors import MemoryValidationError, NotFoundError
from powercontext.memory.ports import (
    CommitResult,
    IdempotencyClaim,
    NewVersion,
    PlannedChange,
    Vector,
)
from powercontext.memory.values import as_utc
from powercontext.storage.common import (
    conflict,
    idempotency_record,
    unit_vectors,
    version_fields,
)

CHUNK = 500
"""Bound parameters per IN (...) list; below every SQLite build's variable limit."""


def chunks(items: Sequence[object], size: int = CHUNK) -> Iterator[Sequence[object]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _retired_entries(
    conn: sqlite3.Connection, scope_id: str, previous_ids: list[str], expected: int | None
) -> dict[str, str]:
    """entry_id of every version to retire; each must exist and still be active."""
    if len(set(previous_ids)) != len(previous_ids):
        raise conflict("one commit retires the same entry version twice", expected, expected)
    found: dict[str, tuple[str, int | None]] = {}
    for part in chunks(previous_ids):
        marks = ",".join("?" * len(part))
        for version_id, entry_id, removed in conn.execute(
            "SELECT entry_version_id, entry_id, removed_revision FROM entry_versions "
            f"WHERE scope_id = ? AND entry_version_id IN ({marks})",
            (scope_id, *part),
        ):
            found[version_id] = (entry_id, removed)
    for version_id in previous_ids:
        if version_id not in found:
            raise conflict(f"entry version {version_id!r} does not exist", expected, expected)
        if found[version_id][1] is not None:
            raise conflict(
                f"entry version {version_id!r} was retired at revision {found[version_id][1]}",
                expected,
                expected,
            )
    return {version_id: entry_id for version_id, (entry_id, _) in found.items()}


def commit(
    conn: sqlite3.Connection,
    scope_id: str,
    expected_head: int | None,
    changes: Sequence[PlannedChange],
    now: datetime,
    idempotency: IdempotencyClaim | None = None,
) -> CommitResult:
    expected = expected_head or None  # 0 and None both mean "no revision yet"
    if (
        idempotency is not None
        and conn.execute(
            "SELECT 1 FROM idempotency_keys WHERE scope_id = ? AND idempotency_key = ?",
            (scope_id, idempotency.key),
        ).fetchone()
    ):
        raise conflict("the idempotency key was recorded by another write", expected, None)
    row = conn.execute(
        "SELECT scope_key, head_revision FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    actual: int | None = int(row[1]) if row else None
    if expected != actual:
        raise conflict(
            f"scope {scope_id!r} is at revision {actual or 0}, expected {expected or 0}",
            expected,
            actual,
        )
    revision = (actual or 0) + 1
    created_at = now.isoformat()
    if row is None:
        cursor = conn.execute(
            "INSERT INTO scopes (scope_id, head_revision, created_at) VALUES (?, ?, ?)",
            (scope_id, revision, created_at),
        )
        scope_key = int(cursor.lastrowid or 0)
        previous_active = 0
    else:
        scope_key = int(row[0])
        swapped = conn.execute(
            "UPDATE scopes SET head_revision = ? WHERE scope_key = ? AND head_revision = ?",
            (revision, scope_key, actual),
        )
        if swapped.rowcount != 1:
            raise conflict(f"scope {scope_id!r} head moved during commit", expected, None)
        active_row = conn.execute(
            "SELECT active_count FROM revisions WHERE scope_id = ? AND revision = ?",
            (scope_id, actual),
        ).fetchone()
        previous_active = int(active_row[0]) if active_row else 0

    previous_ids = [c.previous_entry_version_id for c in changes if c.previous_entry_version_id]
    retired = _retired_entries(conn, scope_id, previous_ids, expected)
    news = [c.new for c in changes if c.new is not None]
    for change in changes:
        previous = change.previous_entry_version_id
        new = change.new
        if change.op == "revise" and new and previous and retired[previous] != new.entry_id:
            raise MemoryValidationError(
                f"revise of entry {new.entry_id!r} names a version of another entry"
            )

    conn.execute(
        "INSERT INTO revisions (scope_id, revision, created_at, active_count, change_count) "
        "VALUES (?, ?, ?, ?, ?)",
        (
            scope_id,
            revision,
            created_at,
            previous_active + len(news) - len(previous_ids),
            len(changes),
        ),
    )
    if previous_ids:
        updated = conn.executemany(
            "UPDATE entry_versions SET removed_revision = ? "
            "WHERE scope_id = ? AND entry_version_id = ? AND removed_revision IS NULL",
            [(revision, scope_id, version_id) for version_id in previous_ids],
        )
        if updated.rowcount != len(previous_ids):
            raise conflict("an entry version to retire is no longer active", expected, actual)
    keys = _insert_versions(conn, scope_id, scope_key, revision, created_at, news, expected)
    conn.executemany(
        "INSERT INTO changes (scope_id, revision, seq, op, entry_id, entry_version_id, "
        "previous_entry_version_id, reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                scope_id,
                revision,
                seq,
                change.op,
                change.new.entry_id
                if change.new
                else retired[change.previous_entry_version_id or ""],
                change.new.entry_version_id if change.new else change.previous_entry_version_id,
                change.previous_entry_version_id,
                change.reason,
                created_at,
            )
            for seq, change in enumerate(changes, start=1)
        ],
    )
    if idempotency is not None:
        conn.execute(*idempotency_record(scope_id, idempotency, revision, keys, "sqlite"))
    return CommitResult(revision=revision, created_at=now, keys=keys)


def _insert_versions(
    conn: sqlite3.Connection,
    scope_id: str,
    scope_key: int,
    revision: int,
    created_at: str,
    news: list[NewVersion],
    expected: int | None,
) -> tuple[int, ...]:
    if not news:
        return ()
    # Keys are assigned here, not by SQLite, so executemany can insert the batch and the FTS
    # rows in two statements; no other writer can insert while this transaction holds the lock.
    base = int(conn.execute("SELECT coalesce(max(key), 0) FROM entry_versions").fetchone()[0])
    keys = tuple(range(base + 1, base + 1 + len(news)))
    try:
        conn.executemany(
            "INSERT INTO entry_versions (key, scope_id, entry_id, entry_version_id, version, "
            "kind, text, metadata, created_at, added_revision, thread, occurred_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    key,
                    scope_id,
                    *version_fields(new),
                    created_at,
                    revision,
                    new.thread,
                    None
                    if new.occurred_at is None
                    else as_utc(new.occurred_at, "occurred_at").isoformat(),
                )
                for key, new in zip(keys, news, strict=True)
            ],
        )
    except sqlite3.IntegrityError as exc:
        raise conflict(
            f"a new entry version collides with a stored one ({exc})", expected, expected
        ) from exc
    tag = f"s{scope_key}"
    conn.executemany(
        "INSERT INTO entry_fts (rowid, scope_tag, tokens) VALUES (?, ?, ?)",
        [(key, tag, new.index_tokens) for key, new in zip(keys, news, strict=True)],
    )
    return keys


def _require_keys(conn: sqlite3.Connection, scope_id: str, keys: Sequence[int]) -> None:
    """NotFoundError unless every key names a version of the scope."""
    wanted = sorted(set(keys))
    known: set[int] = set()
    for part in chunks(wanted):
        marks = ",".join("?" * len(part))
        known.update(
            int(row[0])
            for row in conn.execute(
                f"SELECT key FROM entry_versions WHERE scope_id = ? AND key IN ({marks})",
                (scope_id, *part),
            )
        )
    missing = [key for key in wanted if key not in known]
    if missing:
        raise NotFoundError(f"scope {scope_id!r} has no entry versions with keys {missing[:5]}")


def rewrite_tokens(
    conn: sqlite3.Connection, scope_id: str, items: Sequence[tuple[int, str]]
) -> None:
    """New derived tokens for stored versions; `fts_rewrites` tells the BM25 cache."""
    _require_keys(conn, scope_id, [key for key, _ in items])
    conn.executemany(
        "UPDATE entry_fts SET tokens = ? WHERE rowid = ?", [(tokens, key) for key, tokens in items]
    )
    conn.executemany(
        "INSERT OR REPLACE INTO fts_rewrites (scope_id, key) VALUES (?, ?)",
        [(scope_id, key) for key, _ in items],
    )


def encode_vectors(items: Sequence[tuple[int, Vector]]) -> list[tuple[int, bytes]]:
    """Unit float32 little-endian blobs; every vector finite and of one dimension."""
    _, rows = unit_vectors(items)
    return [(key, array.astype("<f4").tobytes()) for key, array in rows]


def put_vectors(
    conn: sqlite3.Connection, scope_id: str, profile_id: str, items: list[tuple[int, bytes]]
) -> None:
    stored = conn.execute(
        "SELECT length(vector) FROM entry_vectors WHERE scope_id = ? AND profile_id = ? LIMIT 1",
        (scope_id, profile_id),
    ).fetchone()
    if stored is not None and int(stored[0]) != len(items[0][1]):
        raise MemoryValidationError(
            f"profile {profile_id!r} stores {int(stored[0]) // 4}-dimensional vectors; "
            f"got {len(items[0][1]) // 4}"
        )
    _require_keys(conn, scope_id, [key for key, _ in items])
    # REPLACE deletes the old row and inserts a new one with a fresh AUTOINCREMENT vector_id,
    # which is how the vector cache learns that a key's vector changed.
    conn.executemany(
        "INSERT OR REPLACE INTO entry_vectors (scope_id, profile_id, key, vector) "
        "VALUES (?, ?, ?, ?)",
        [(scope_id, profile_id, key, blob) for key, blob in items],
    )


def _event_time(occurred_at: datetime | None) -> str | None:
    """ISO text in UTC: filters compare the stored times as text, so one offset for all."""
    return None if occurred_at is None else as_utc(occurred_at, "occurred_at").isoformat()
