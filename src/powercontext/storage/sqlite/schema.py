"""Versioned schema migrations of the embedded store.

Each migration is applied once, in its own write transaction, and recorded in
`schema_migrations`. Migrations are append-only: never edit one that has shipped, add the next.

A version is active at revision r when `added_revision <= r` and (`removed_revision` is null
or `> r`): two integers per version record every revision's complete active set without
copying it. Every table carries `scope_id` (the FTS table carries the scope's tag) so the data
can later be distributed by scope.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from powercontext.storage import ddl
from powercontext.storage.ddl import render


def _ddl(*templates: str) -> tuple[str, ...]:
    return render("sqlite", *templates)


# entry_versions puts the small columns the search filters read (scope, revisions) before the
# large ones (metadata, text): a row of up to 8 KiB text spills into overflow pages, and SQLite
# reads a record up to the last column it needs.
#
# The FTS table indexes the analyzer's space-joined tokens with the `ascii` tokenizer: it
# splits only on ASCII separators and folds only ASCII case, so every token the analyzer
# produced (already casefolded, CJK grams included) is indexed verbatim, independent of
# SQLite's Unicode 6.1 tables. `scope_tag` ("s<scope_key>") was meant to let MATCH restrict
# a query to one scope (bm25 gives it weight 0); queries no longer use it, since the join on
# entry_versions filters by scope at half the cost (see reads.fts5_candidates).
_V1 = (
    """
    CREATE TABLE scopes (
        scope_key INTEGER PRIMARY KEY,
        scope_id TEXT NOT NULL UNIQUE,
        head_revision INTEGER NOT NULL CHECK (head_revision >= 1),
        created_at TEXT NOT NULL
    )
    """,
    *_ddl(ddl.REVISIONS),
    """
    CREATE TABLE entry_versions (
        key INTEGER PRIMARY KEY,
        scope_id TEXT NOT NULL,
        added_revision INTEGER NOT NULL,
        removed_revision INTEGER,
        entry_id TEXT NOT NULL,
        entry_version_id TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version >= 1),
        kind TEXT NOT NULL,
        created_at TEXT NOT NULL,
        metadata TEXT NOT NULL,
        text TEXT NOT NULL,
        FOREIGN KEY (scope_id, added_revision) REFERENCES revisions (scope_id, revision),
        CHECK (removed_revision IS NULL OR removed_revision > added_revision)
    )
    """,
    "CREATE UNIQUE INDEX entry_versions_by_id ON entry_versions (scope_id, entry_version_id)",
    "CREATE UNIQUE INDEX entry_versions_by_entry ON entry_versions (scope_id, entry_id, version)",
    *_ddl(ddl.ONE_ACTIVE_VERSION),
    "CREATE INDEX entry_versions_by_key ON entry_versions (scope_id, key)",
    "CREATE INDEX entry_versions_by_removal ON entry_versions (scope_id, removed_revision)",
    *_ddl(ddl.CHANGES),
    "CREATE VIRTUAL TABLE entry_fts USING fts5 (scope_tag, tokens, tokenize = 'ascii')",
    """
    CREATE TABLE entry_vectors (
        vector_id INTEGER PRIMARY KEY AUTOINCREMENT,
        scope_id TEXT NOT NULL,
        profile_id TEXT NOT NULL,
        key INTEGER NOT NULL REFERENCES entry_versions (key),
        vector BLOB NOT NULL,
        UNIQUE (scope_id, profile_id, key)
    )
    """,
    # The vector cache refreshes incrementally: rows newer than the last vector_id it saw.
    "CREATE INDEX entry_vectors_by_id ON entry_vectors (scope_id, profile_id, vector_id)",
)

# Issue 17: the thread an entry belongs to and when its event happened. Neighbours for
# contextual indexing are the thread's first versions in key (write) order, hence the index.
# `fts_rewrites` names the versions whose derived tokens were rewritten after their insert (a
# later neighbour arrived); the in-memory BM25 cache replays rows newer than the last `seq` it
# saw. REPLACE keeps one row per version, so the table stays as large as the rewritten set.
_V2 = (
    *_ddl(*ddl.THREADS),
    """
    CREATE TABLE fts_rewrites (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        scope_id TEXT NOT NULL,
        key INTEGER NOT NULL REFERENCES entry_versions (key),
        UNIQUE (scope_id, key)
    )
    """,
    "CREATE INDEX fts_rewrites_by_seq ON fts_rewrites (scope_id, seq)",
    *_ddl(ddl.SCOPE_INDEX_PROFILES),
)

_V3 = _ddl(ddl.IDEMPOTENCY_KEYS)

# Issue 18, erasure: `forget` deletes versions for good. The change log gains the op and who
# made it (SQLite cannot alter a CHECK, so the table is rebuilt); each erased version leaves a
# tombstone (ids, erasing revision, actor: no content); `scopes.erasures` counts erasures, so
# the in-memory BM25 and vector caches of every process drop what they hold of a scope.
_V4 = (
    """
    CREATE TABLE changes_v4 (
        scope_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        op TEXT NOT NULL CHECK (op IN ('add', 'revise', 'retire', 'reactivate', 'forget')),
        entry_id TEXT NOT NULL,
        entry_version_id TEXT NOT NULL,
        previous_entry_version_id TEXT,
        reason TEXT,
        created_at TEXT NOT NULL,
        actor TEXT,
        PRIMARY KEY (scope_id, revision, seq),
        FOREIGN KEY (scope_id, revision) REFERENCES revisions (scope_id, revision)
    ) WITHOUT ROWID
    """,
    """
    INSERT INTO changes_v4 (scope_id, revision, seq, op, entry_id, entry_version_id,
        previous_entry_version_id, reason, created_at)
    SELECT scope_id, revision, seq, op, entry_id, entry_version_id,
        previous_entry_version_id, reason, created_at FROM changes
    """,
    "DROP TABLE changes",
    "ALTER TABLE changes_v4 RENAME TO changes",
    "ALTER TABLE scopes ADD COLUMN erasures INTEGER NOT NULL DEFAULT 0",
    *_ddl(*ddl.ERASED_VERSIONS),
    # Deleting a version checks the rows that reference it by key (foreign keys): without these
    # indexes each deleted version scanned every stored vector (seconds per 10k erased).
    "CREATE INDEX entry_vectors_by_key ON entry_vectors (key)",
    "CREATE INDEX fts_rewrites_by_key ON fts_rewrites (key)",
)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2, _V3, _V4)
"""MIGRATIONS[i] brings the schema from version i to version i + 1."""

SCHEMA_VERSION = len(MIGRATIONS)


def _applied_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return int(row[0])


_BOOKKEEPING_COLUMNS = ["version", "applied_at"]
_FIRST_TABLES = frozenset({"scopes", "revisions", "entry_versions", "changes", "entry_fts"})
"""Tables migration 1 creates and no later one drops: any file of ours past it has them."""


def foreign_tables(conn: sqlite3.Connection) -> list[str]:
    """The tables of a database PowerContext never migrated (another application's file), or
    [] for a new, empty file or one of ours. Read before anything is written to the file: even
    switching it to WAL mode changes its header. Every migration commits together with its
    `schema_migrations` row, so a file of ours never shows tables without that one.

    The name `schema_migrations` alone proves nothing: Rails, golang-migrate and Ecto keep a
    table of that name. Taken for ours, such a file was switched to WAL mode (its header
    rewritten) and then reported as a "newer schema" or a failed migration. So the table must
    have our columns, and once it records a migration, migration 1's tables must be there."""
    names = [
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite^_%' ESCAPE '^' ORDER BY name"
        )
    ]
    if "schema_migrations" not in names:
        return names
    columns = [str(row[1]) for row in conn.execute("PRAGMA table_info(schema_migrations)")]
    if columns != _BOOKKEEPING_COLUMNS:
        return names
    recorded = conn.execute("SELECT 1 FROM schema_migrations LIMIT 1").fetchone() is not None
    return names if recorded and not set(names) >= _FIRST_TABLES else []


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every pending migration; returns the schema version. Safe when several processes
    open the same file at once: each step re-reads the version inside its write transaction."""
    version = _applied_version(conn)
    ddl.check_not_newer(version, SCHEMA_VERSION)
    while version < SCHEMA_VERSION:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            version = _applied_version(conn)
            ddl.check_not_newer(version, SCHEMA_VERSION)
            if version < SCHEMA_VERSION:
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
                version += 1
                conn.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                    (version, datetime.now(UTC).isoformat()),
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return version
