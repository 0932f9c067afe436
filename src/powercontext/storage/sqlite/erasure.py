"""Erasure in the embedded store: how a forgotten entry's bytes leave the file.

`erase` runs in the writer's BEGIN IMMEDIATE transaction: the same compare-and-swap on the
head as a commit, then DELETEs of the versions' vectors, FTS rows, token rewrites and rows,
a tombstone and a `forget` change per version, cleared reasons on their older changes, and
blanked body hashes on the idempotency keys of the writes that touched the erased entries.

Deleted is not yet gone from the disk. Three things make it so:
- every connection runs with `PRAGMA secure_delete = ON`, so SQLite zeroes freed cells and
  pages instead of leaving the old bytes in free space;
- FTS5 keeps a deleted row's tokens in its index segments until they are merged, so `erase`
  merges them all (`optimize`) in its own transaction, and `scrub` again after the
  neighbours' tokens are re-derived;
- in WAL mode the old pages also sit in the -wal file, so `scrub` checkpoints it and truncates
  it to zero bytes (`wal_checkpoint(TRUNCATE)`). A reader holding an older snapshot (another
  process) can keep the checkpoint from completing; that is logged, and the writer's WAL size
  limit drops to 0, so that the first commit after a later checkpoint restarts the log cuts
  the old frames off the file (a restart alone overwrites the log from its start in place).
`scopes.erasures` counts the scope's erasures, so every process's in-memory BM25 and vector
caches (which hold tokens and vectors) drop the scope on their next refresh.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from powercontext.memory.idempotency import ERASED_BODY_HASH
from powercontext.memory.ports import (
    NOTHING_ERASED,
    ErasureRequest,
    ErasureResult,
    StoredVersion,
    Tombstone,
    TombstoneQuery,
)
from powercontext.storage.common import (
    ERASED_COLUMNS,
    VERSION_COLUMNS,
    ErasedRow,
    conflict,
    erased_active_counts,
    erased_version,
    erasure_head,
    erasure_key_record,
    erasure_records,
    findable,
    tombstone_from_row,
    tombstone_query,
    version_from_row,
)
from powercontext.storage.sqlite.writes import chunks

log = logging.getLogger("powercontext.storage")


def _doomed_rows(
    conn: sqlite3.Connection, scope_id: str, entry_ids: Sequence[str] | None
) -> list[ErasedRow]:
    select = f"SELECT {ERASED_COLUMNS} FROM entry_versions WHERE scope_id = ?"
    if entry_ids is None:
        return [tuple(row) for row in conn.execute(select + " ORDER BY key", (scope_id,))]
    rows: list[ErasedRow] = []
    for part in chunks(sorted(set(entry_ids))):
        marks = ",".join("?" * len(part))
        rows += [
            tuple(row)
            for row in conn.execute(select + f" AND entry_id IN ({marks})", (scope_id, *part))
        ]
    return sorted(rows)


def erase(conn: sqlite3.Connection, request: ErasureRequest, now: datetime) -> ErasureResult:
    scope_id = request.scope_id
    row = conn.execute(
        "SELECT scope_key, head_revision FROM scopes WHERE scope_id = ?", (scope_id,)
    ).fetchone()
    head = erasure_head(request, None if row is None else int(row[1]))
    scope_key = int(row[0])
    doomed = _doomed_rows(conn, scope_id, request.entry_ids)
    if not doomed:
        for sql, rows in erasure_key_record(request, head, "sqlite", NOTHING_ERASED):
            conn.executemany(sql, rows)
        return ErasureResult(revision=None, erased=())
    revision = head + 1
    created_at = now.isoformat()
    swapped = conn.execute(
        "UPDATE scopes SET head_revision = ?, erasures = erasures + 1 "
        "WHERE scope_key = ? AND head_revision = ?",
        (revision, scope_key, head),
    )
    if swapped.rowcount != 1:
        raise conflict(f"scope {scope_id!r} head moved during erasure", request.expected_head, None)
    counts = erased_active_counts(doomed, head)
    active_row = conn.execute(
        "SELECT active_count FROM revisions WHERE scope_id = ? AND revision = ?",
        (scope_id, head),
    ).fetchone()
    active = int(active_row[0]) if active_row else 0
    conn.executemany(
        "UPDATE revisions SET active_count = max(active_count - ?, 0) "
        "WHERE scope_id = ? AND revision = ?",
        [(count, scope_id, at) for at, count in counts.items()],
    )
    conn.execute(
        "INSERT INTO revisions (scope_id, revision, created_at, active_count, change_count) "
        "VALUES (?, ?, ?, ?, ?)",
        (scope_id, revision, created_at, max(active - counts.get(head, 0), 0), len(doomed)),
    )
    _delete(conn, scope_id, [r[0] for r in doomed])
    erased_entries = sorted({r[1] for r in doomed})
    for part in chunks(erased_entries):
        marks = ",".join("?" * len(part))
        conn.execute(
            f"UPDATE changes SET reason = NULL WHERE scope_id = ? AND entry_id IN ({marks})",
            (scope_id, *part),
        )
        conn.execute(
            FORGET_WRITE_BODIES.format(marks=marks), (ERASED_BODY_HASH, scope_id, scope_id, *part)
        )
    for sql, rows in erasure_records(request, doomed, revision, created_at, "sqlite"):
        conn.executemany(sql, rows)
    # Merged in the erasing transaction, not only by the later `scrub`: a process killed
    # between the two left the erased tokens in the index's segments for good. `scrub`'s
    # own optimize then costs nothing unless neighbours' tokens were rewritten meanwhile.
    optimize_fulltext(conn)
    return ErasureResult(revision=revision, erased=tuple(erased_version(r) for r in doomed))


# The keyed writes (whole batches) whose changes touched an erased entry lose their body hash:
# a hash of the erased text confirms a guess of it. Earlier erasures' keys hash ids only.
FORGET_WRITE_BODIES = (
    "UPDATE idempotency_keys SET body_hash = ? WHERE scope_id = ? AND revision IN "
    "(SELECT revision FROM changes WHERE scope_id = ? AND op <> 'forget' "
    "AND entry_id IN ({marks}))"
)


def _delete(conn: sqlite3.Connection, scope_id: str, keys: list[int]) -> None:
    """Every row holding the versions' content or derived data, children first."""
    for part in chunks(keys):
        marks = ",".join("?" * len(part))
        params = (scope_id, *part)
        conn.execute(f"DELETE FROM entry_vectors WHERE scope_id = ? AND key IN ({marks})", params)
        conn.execute(f"DELETE FROM fts_rewrites WHERE scope_id = ? AND key IN ({marks})", params)
        conn.execute(f"DELETE FROM entry_fts WHERE rowid IN ({marks})", tuple(part))
        conn.execute(f"DELETE FROM entry_versions WHERE scope_id = ? AND key IN ({marks})", params)


def optimize_fulltext(conn: sqlite3.Connection) -> None:
    """Merge every FTS5 segment, dropping the deleted rows' tokens (in a write transaction)."""
    conn.execute("INSERT INTO entry_fts (entry_fts) VALUES ('optimize')")


def checkpoint(conn: sqlite3.Connection, target: str) -> None:
    """Copy the WAL into the database and truncate it; outside any transaction."""
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        # A later checkpoint (the automatic ones are PASSIVE) lets the next write restart
        # the log from its first frame but keeps the file's length: the erased pages stayed
        # in its tail, past the frames written since. With no size limit, the first commit
        # after the restart cuts the file to what it wrote (only this, the writer, restarts it).
        conn.execute("PRAGMA journal_size_limit = 0")
        log.warning(
            "after an erasure, the WAL of %s could not be truncated: a reader holds an older "
            "snapshot; its pages stay until a checkpoint completes and the next write "
            "restarts the log",
            target,
        )


def tombstones(conn: sqlite3.Connection, query: TombstoneQuery) -> list[Tombstone]:
    if query.entry_ids is not None:  # an id no row can hold finds nothing, the others still do
        kept = tuple(i for i in query.entry_ids if findable((i,)))
        query = TombstoneQuery(query.scope_id, entry_ids=kept)
    sql, params = tombstone_query(query, "sqlite")
    if not findable(params):
        return []
    rows = conn.execute(sql, params).fetchall()
    return [tombstone_from_row(row, datetime.fromisoformat(row[4])) for row in rows]


# An erasure's revision holds `forget` changes only (and a write's none): the first change of
# each revision after the one asked tells, one primary-key probe per revision, however many
# entries the writes in between added.
_ERASED_SINCE = (
    "SELECT 1 FROM revisions r WHERE r.scope_id = ? AND r.revision > ? AND ("
    "SELECT c.op FROM changes c WHERE c.scope_id = r.scope_id AND c.revision = r.revision "
    "ORDER BY c.seq LIMIT 1) = 'forget' LIMIT 1"
)


def erased_since(conn: sqlite3.Connection, scope_id: str, revision: int) -> bool:
    """MemoryStore.erased_since."""
    row = conn.execute(
        _ERASED_SINCE,
        (scope_id, revision),
    ).fetchone()
    return row is not None


def removed_versions(
    conn: sqlite3.Connection,
    scope_id: str,
    threads: Sequence[str] | None,
    batches: Sequence[int] | None,
) -> list[StoredVersion]:
    """The inactive members of the sequences named (MemoryStore.removed_versions)."""
    select = (
        f"SELECT {VERSION_COLUMNS} FROM entry_versions "
        "WHERE scope_id = ? AND removed_revision IS NOT NULL AND "
    )
    rows: list[Any] = []
    if threads is None:
        rows += conn.execute(select + "version = 1 AND thread IS NOT NULL", (scope_id,)).fetchall()
    for part in chunks(sorted(set(threads or ()))):
        marks = ",".join("?" * len(part))
        sql = select + f"version = 1 AND thread IN ({marks})"
        rows += conn.execute(sql, (scope_id, *part)).fetchall()
    if batches is None:
        rows += conn.execute(select + "thread IS NULL", (scope_id,)).fetchall()
    for revisions in chunks(sorted(set(batches or ()))):
        marks = ",".join("?" * len(revisions))
        sql = select + f"thread IS NULL AND added_revision IN ({marks})"
        rows += conn.execute(sql, (scope_id, *revisions)).fetchall()
    versions = [
        version_from_row(row, metadata=json.loads, created_at=datetime.fromisoformat)
        for row in rows
    ]
    return sorted(versions, key=lambda version: version.key)


def delete_vectors(
    conn: sqlite3.Connection, scope_id: str, keys: Sequence[int], keep_profile: str | None
) -> bool:
    """MemoryStore.delete_vectors; whether any vector was deleted. The vector caches only
    learn of new vectors by their ids, so a deletion counts as an erasure of the scope
    (`scopes.erasures`): every process drops its matrices of it on the next refresh."""
    deleted = 0
    for part in chunks(sorted(set(keys))):
        marks = ",".join("?" * len(part))
        sql = f"DELETE FROM entry_vectors WHERE scope_id = ? AND key IN ({marks})"
        if keep_profile is None:
            deleted += conn.execute(sql, (scope_id, *part)).rowcount
        else:
            sql += " AND profile_id <> ?"
            deleted += conn.execute(sql, (scope_id, *part, keep_profile)).rowcount
    if deleted:
        conn.execute("UPDATE scopes SET erasures = erasures + 1 WHERE scope_id = ?", (scope_id,))
    return deleted > 0
