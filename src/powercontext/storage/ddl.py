"""What both stores' schema migrations share: DDL written once and rendered per dialect,
and the refusal of a database newer than this code.

A template names each column's type by what it holds; `render` spells it in the dialect:
PostgreSQL's own types, and SQLite's storage classes (times as ISO 8601 text, key lists as
JSON text). Tables keyed by their primary key alone are WITHOUT ROWID on SQLite. The rendered
text is what each store's migrations have always run: migrations are append-only.
"""

from __future__ import annotations

from powercontext.memory.errors import StorageError
from powercontext.storage.filter_sql import Dialect

_SPELLING: dict[Dialect, dict[str, str]] = {
    "postgres": {
        "text": "text",
        "int": "integer",
        "bigint": "bigint",
        "time": "timestamptz",
        "key_list": "bigint[]",
        "without_rowid": "",
    },
    "sqlite": {
        "text": "TEXT",
        "int": "INTEGER",
        "bigint": "INTEGER",
        "time": "TEXT",
        "key_list": "TEXT",
        "without_rowid": " WITHOUT ROWID",
    },
}


def check_not_newer(version: int, supported: int) -> None:
    """Refuse a database whose schema `version` is newer than the `supported` one."""
    if version > supported:
        raise StorageError(
            f"the database has schema version {version}, newer than the {supported} this "
            "PowerContext supports; upgrade PowerContext to open it"
        )


def render(dialect: Dialect, *templates: str) -> tuple[str, ...]:
    """The statements of `templates` in `dialect`."""
    return tuple(template.format_map(_SPELLING[dialect]) for template in templates)


REVISIONS = """
    CREATE TABLE revisions (
        scope_id {text} NOT NULL REFERENCES scopes (scope_id),
        revision {bigint} NOT NULL CHECK (revision >= 1),
        created_at {time} NOT NULL,
        active_count {bigint} NOT NULL CHECK (active_count >= 0),
        change_count {int} NOT NULL,
        PRIMARY KEY (scope_id, revision)
    ){without_rowid}
    """

# At most one active version per entry: a stale plan fails here instead of forking an entry.
ONE_ACTIVE_VERSION = """
    CREATE UNIQUE INDEX entry_versions_one_active ON entry_versions (scope_id, entry_id)
    WHERE removed_revision IS NULL
    """

CHANGES = """
    CREATE TABLE changes (
        scope_id {text} NOT NULL,
        revision {bigint} NOT NULL,
        seq {int} NOT NULL,
        op {text} NOT NULL CHECK (op IN ('add', 'revise', 'retire', 'reactivate')),
        entry_id {text} NOT NULL,
        entry_version_id {text} NOT NULL,
        previous_entry_version_id {text},
        reason {text},
        created_at {time} NOT NULL,
        PRIMARY KEY (scope_id, revision, seq),
        FOREIGN KEY (scope_id, revision) REFERENCES revisions (scope_id, revision)
    ){without_rowid}
    """

# Issue 17: the thread an entry belongs to and when its event happened; contextual indexing
# reads a thread's first versions in key (write) order.
THREADS = (
    "ALTER TABLE entry_versions ADD COLUMN thread {text}",
    "ALTER TABLE entry_versions ADD COLUMN occurred_at {time}",
    """
    CREATE INDEX entry_versions_by_thread ON entry_versions (scope_id, thread, key)
    WHERE thread IS NOT NULL
    """,
)

# The index profile (settings that decide tokens and vectors) each scope was indexed under.
SCOPE_INDEX_PROFILES = """
    CREATE TABLE scope_index_profiles (
        scope_id {text} PRIMARY KEY,
        profile {text} NOT NULL,
        recorded_at {time} NOT NULL
    )
    """

# Idempotency keys are written in the commit's transaction: a committed write always has its
# key, so a client retry after a timeout finds it instead of writing the batch twice.
IDEMPOTENCY_KEYS = """
    CREATE TABLE idempotency_keys (
        scope_id {text} NOT NULL,
        idempotency_key {text} NOT NULL,
        body_hash {text} NOT NULL,
        revision {bigint} NOT NULL,
        version_keys {key_list} NOT NULL,
        PRIMARY KEY (scope_id, idempotency_key),
        FOREIGN KEY (scope_id, revision) REFERENCES revisions (scope_id, revision)
    ){without_rowid}
    """

# Issue 18, erasure: each erased version leaves a tombstone (ids, erasing revision, actor: no
# content).
ERASED_VERSIONS = (
    """
    CREATE TABLE erased_versions (
        scope_id {text} NOT NULL,
        entry_version_id {text} NOT NULL,
        entry_id {text} NOT NULL,
        version {int} NOT NULL,
        erased_revision {bigint} NOT NULL,
        erased_at {time} NOT NULL,
        actor {text},
        PRIMARY KEY (scope_id, entry_version_id),
        FOREIGN KEY (scope_id, erased_revision) REFERENCES revisions (scope_id, revision)
    ){without_rowid}
    """,
    "CREATE INDEX erased_versions_by_entry ON erased_versions (scope_id, entry_id, version)",
)
