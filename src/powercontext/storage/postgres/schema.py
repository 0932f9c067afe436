"""Versioned schema migrations of the PostgreSQL store.

Each migration runs once, in its own transaction, under an advisory lock, and is recorded in
`schema_migrations`; several servers opening one database at once apply it exactly once.
Migrations are append-only: never edit one that has shipped, add the next.

The model is the embedded store's: a version is active at revision r when
`added_revision <= r` and (`removed_revision` is null or `> r`), so two integers per version
record every revision's complete active set. Every table is keyed by `scope_id` (each primary
key and unique constraint starts with it, each foreign key carries it), so the tables can be
distributed by scope with Citus `create_distributed_table(table, 'scope_id')`; only the
bookkeeping table `schema_migrations` is global (a Citus reference or coordinator-local table).

Per-profile HNSW indexes are not migrations: the store creates one the first time it stores
vectors of a new embedding profile (see vectors.py).
"""

from __future__ import annotations

from psycopg import AsyncConnection, errors, sql
from psycopg.rows import TupleRow

from powercontext.memory.errors import StorageError
from powercontext.storage import ddl
from powercontext.storage.ddl import render


def _ddl(*templates: str) -> tuple[str, ...]:
    return render("postgres", *templates)


# pg_advisory_xact_lock key: "powercontext schema" as a constant so every process agrees.
MIGRATION_LOCK = 7_307_216_041_993_010_001

# The tsvector holds the analyzer's tokens verbatim (the store builds the literal itself, see
# fulltext.py): no parser or dictionary of PostgreSQL touches them, so CJK grams and every
# casefolded token match exactly as the analyzer produced them. `term_stats` keeps each term's
# document frequency over the versions active at the head, for the IDF of the ranking.
_V1 = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    """
    CREATE TABLE scopes (
        scope_id text PRIMARY KEY,
        head_revision bigint NOT NULL CHECK (head_revision >= 1),
        active_count bigint NOT NULL CHECK (active_count >= 0),
        lexeme_total bigint NOT NULL CHECK (lexeme_total >= 0),
        created_at timestamptz NOT NULL
    )
    """,
    # Row keys of entry versions, one sequence for all scopes: a key orders versions by
    # insertion, within a scope (keys are drawn under the scope's lock) and across scopes.
    "CREATE SEQUENCE entry_version_keys AS bigint",
    *_ddl(ddl.REVISIONS),
    """
    CREATE TABLE entry_versions (
        scope_id text NOT NULL,
        key bigint NOT NULL,
        entry_id text NOT NULL,
        entry_version_id text NOT NULL,
        version integer NOT NULL CHECK (version >= 1),
        kind text NOT NULL,
        text text NOT NULL,
        metadata json NOT NULL,
        created_at timestamptz NOT NULL,
        added_revision bigint NOT NULL,
        removed_revision bigint,
        tokens tsvector NOT NULL,
        PRIMARY KEY (scope_id, key),
        UNIQUE (scope_id, entry_version_id),
        UNIQUE (scope_id, entry_id, version),
        FOREIGN KEY (scope_id, added_revision) REFERENCES revisions (scope_id, revision),
        CHECK (removed_revision IS NULL OR removed_revision > added_revision)
    )
    """,
    *_ddl(ddl.ONE_ACTIVE_VERSION),
    # missing_vector_count looks only at versions added after a fully embedded revision.
    "CREATE INDEX entry_versions_by_added ON entry_versions (scope_id, added_revision)",
    "CREATE INDEX entry_versions_tokens ON entry_versions USING gin (tokens)",
    *_ddl(ddl.CHANGES),
    # `embedding` has no typmod because profiles differ in dimension; each profile's partial
    # HNSW index casts to its own vector(d), which also rejects a vector of another dimension.
    """
    CREATE TABLE entry_vectors (
        scope_id text NOT NULL,
        profile_id text NOT NULL,
        key bigint NOT NULL,
        embedding vector NOT NULL,
        PRIMARY KEY (scope_id, profile_id, key),
        FOREIGN KEY (scope_id, key) REFERENCES entry_versions (scope_id, key)
    )
    """,
    """
    CREATE TABLE term_stats (
        scope_id text NOT NULL REFERENCES scopes (scope_id),
        term text NOT NULL,
        df bigint NOT NULL CHECK (df >= 0),
        PRIMARY KEY (scope_id, term)
    )
    """,
)

_V2 = _ddl(*ddl.THREADS, ddl.SCOPE_INDEX_PROFILES)

_V3 = _ddl(ddl.IDEMPOTENCY_KEYS)

# Issue 23: the SQLite channel's BM25F (search.bm25) needs each version's field lengths and the
# counts of its repeated tokens, and each scope's length totals over its active versions.
# The backfill derives lengths from the stored lexemes, which keep no counts: exact for
# versions without a repeated token; `powercontext reindex --rebuild` makes every row exact.
_V_BM25 = (
    """
    ALTER TABLE entry_versions
        ADD COLUMN own_length integer NOT NULL DEFAULT 0 CHECK (own_length >= 0),
        ADD COLUMN context_length integer NOT NULL DEFAULT 0 CHECK (context_length >= 0),
        ADD COLUMN term_counts jsonb
    """,
    """
    ALTER TABLE scopes
        ADD COLUMN own_length_total bigint NOT NULL DEFAULT 0 CHECK (own_length_total >= 0),
        ADD COLUMN context_length_total bigint NOT NULL DEFAULT 0
            CHECK (context_length_total >= 0)
    """,
    """
    UPDATE entry_versions v SET own_length = l.own, context_length = l.context
    FROM (
        SELECT scope_id, key,
            count(*) FILTER (WHERE left(lexeme, 1) NOT IN ('_', '@')) AS own,
            count(*) FILTER (WHERE left(lexeme, 1) = '_') AS context
        FROM entry_versions, unnest(tsvector_to_array(tokens)) AS lexeme
        GROUP BY scope_id, key
    ) l
    WHERE v.scope_id = l.scope_id AND v.key = l.key
    """,
    """
    UPDATE scopes s SET own_length_total = t.own, context_length_total = t.context
    FROM (
        SELECT scope_id, sum(own_length) AS own, sum(context_length) AS context
        FROM entry_versions WHERE removed_revision IS NULL GROUP BY scope_id
    ) t
    WHERE s.scope_id = t.scope_id
    """,
    # The backfill rewrote every version row: fresh statistics keep the planner on the GIN
    # index for the ranking query instead of waiting for autovacuum.
    "ANALYZE entry_versions",
)

# Issue 18, erasure (migration 5): `forget` deletes versions for good. The change log gains the
# op and who made it; each erased version leaves a tombstone (ids, erasing revision, actor: no
# content).
_V_ERASURE = (
    "ALTER TABLE changes DROP CONSTRAINT changes_op_check",
    """
    ALTER TABLE changes ADD CONSTRAINT changes_op_check
    CHECK (op IN ('add', 'revise', 'retire', 'reactivate', 'forget'))
    """,
    "ALTER TABLE changes ADD COLUMN actor text",
    *_ddl(*ddl.ERASED_VERSIONS),
    # Deleting a version checks the vectors that reference it (foreign key); the primary key
    # (scope, profile, key) cannot answer "by key", so each check scanned the scope's vectors.
    "CREATE INDEX entry_vectors_by_key ON entry_vectors (scope_id, key)",
)

# Issue 20 (migration 6): each lexeme's peaks (storage.postgres.fulltext.Peak) bound what a
# term can add to a score, so a full-text search skips documents that cannot reach its top;
# they cover the versions active at the head, null is unknown (the loose bound k1 + 1 applies).
# Each version's tsvector gains a marker lexeme (chr(31) || lexeme) for each lexeme it repeats,
# with its own statistics: where a word occurs once its bound is lower, and the GIN index finds
# the versions where it repeats. The backfill rewrites the versions with repeats and reads every
# active version's lexemes once.
_V_PEAKS = (
    "ALTER TABLE term_stats ADD COLUMN tf_max integer, ADD COLUMN tf_ratio_max float8",
    """
    UPDATE entry_versions SET tokens = tokens || array_to_tsvector(
        ARRAY(SELECT chr(31) || k FROM jsonb_object_keys(term_counts) AS k
              WHERE octet_length(k) < 2046))
    WHERE term_counts IS NOT NULL
    """,
    """
    INSERT INTO term_stats (scope_id, term, df, tf_max, tf_ratio_max)
    SELECT scope_id, lexeme, count(*), max(tf),
        max(CASE WHEN length = 0 THEN 'Infinity'::float8 ELSE tf::float8 / length END)
    FROM (
        SELECT e.scope_id, l.lexeme,
            CASE WHEN left(l.lexeme, 1) = chr(31)
                THEN (e.term_counts ->> substr(l.lexeme, 2))::integer ELSE 1 END AS tf,
            CASE WHEN left(ltrim(l.lexeme, chr(31)), 1) = '_' THEN e.context_length
                ELSE e.own_length END AS length
        FROM entry_versions e CROSS JOIN LATERAL unnest(tsvector_to_array(e.tokens)) AS l (lexeme)
        WHERE e.removed_revision IS NULL
    ) occurrences
    GROUP BY scope_id, lexeme
    ON CONFLICT (scope_id, term) DO UPDATE
    SET tf_max = EXCLUDED.tf_max, tf_ratio_max = EXCLUDED.tf_ratio_max
    """,
    """
    UPDATE scopes s SET lexeme_total = s.lexeme_total + m.marks
    FROM (
        SELECT scope_id, sum((SELECT count(*) FROM jsonb_object_keys(term_counts))) AS marks
        FROM entry_versions WHERE removed_revision IS NULL AND term_counts IS NOT NULL
        GROUP BY scope_id
    ) m
    WHERE s.scope_id = m.scope_id
    """,
    "ANALYZE entry_versions",
)

# Migration 7: how many times vectors of a scope's stored versions were deleted
# (MemoryStore.delete_vectors, after an erasure). A process keeps hints that every version up to
# a revision has its vector; another process's deletion makes them wrong, and this counter,
# read with each count, tells every process so.
_V_VECTOR_DELETIONS = ("ALTER TABLE scopes ADD COLUMN vector_deletions bigint NOT NULL DEFAULT 0",)

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    _V1,
    _V2,
    _V3,
    _V_BM25,
    _V_ERASURE,
    _V_PEAKS,
    _V_VECTOR_DELETIONS,
)
"""MIGRATIONS[i] brings the schema from version i to version i + 1."""

SCHEMA_VERSION = len(MIGRATIONS)

_CREATE_BOOKKEEPING = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
)


_BOOKKEEPING_COLUMNS = ["version", "applied_at"]


async def applied_version(conn: AsyncConnection[TupleRow]) -> int:
    """The schema version recorded in the schema the migrations create their tables in (the
    first existing one of the search path). A bookkeeping table of another application is
    refused: Rails, golang-migrate and Ecto keep one named `schema_migrations` too.

    Only that schema is looked in: with `search_path=powercontext,public`, as docs/postgres.md
    advises, an unqualified lookup found another application's table in `public` and read
    its versions (text, or timestamps) as ours, so PowerContext could never be installed."""
    cur = await conn.execute(
        "SELECT current_schema(), array_agg(column_name::text ORDER BY ordinal_position) "
        "FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
    )
    row = await cur.fetchone()
    if row is None or row[0] is None or row[1] is None:
        return 0  # nothing recorded (or no schema to create in: CREATE TABLE says so)
    schema, columns = str(row[0]), list(row[1])
    table = sql.Identifier(schema, "schema_migrations")
    if columns == _BOOKKEEPING_COLUMNS:
        cur = await conn.execute(sql.SQL("SELECT coalesce(max(version), 0) FROM {}").format(table))
        found = await cur.fetchone()
        version = int(found[0]) if found else 0
        if version == 0:
            return 0
        # Migration 1's table, named as a parameter: the statement itself names only the
        # global bookkeeping table (tests/integration/test_postgres_distribution.py).
        first_table = sql.Identifier(schema, "scopes").as_string(conn)
        cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (first_table,))
        created = await cur.fetchone()
        if created is not None and created[0]:
            return version
    raise StorageError(
        f"schema {schema!r} holds a schema_migrations table of another application "
        f"(columns: {', '.join(columns)}); PowerContext leaves it untouched: give PowerContext "
        "a schema of its own, first on the search path (options=-csearch_path=NAME,public)"
    )


async def migrate(conn: AsyncConnection[TupleRow], where: str = "this database") -> list[int]:
    """Apply every pending migration on an autocommit connection; returns the versions applied
    by this call (empty when the schema was current). `where` names the database in errors."""
    version = await applied_version(conn)
    ddl.check_not_newer(version, SCHEMA_VERSION)
    applied: list[int] = []
    while version < SCHEMA_VERSION:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await conn.execute(_CREATE_BOOKKEEPING)
            version = await applied_version(conn)
            ddl.check_not_newer(version, SCHEMA_VERSION)
            if version >= SCHEMA_VERSION:
                break
            for statement in MIGRATIONS[version]:
                try:
                    await conn.execute(statement)
                except errors.InsufficientPrivilege as exc:
                    said = " ".join(str(exc).split())  # one line: the server adds a HINT line
                    raise StorageError(
                        f"schema migration {version + 1} needs a privilege this role lacks "
                        f"({exc.sqlstate}: {said}); if it is CREATE EXTENSION vector, run it "
                        f"once as a superuser in {where}"
                    ) from exc
            version += 1
            await conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            applied.append(version)
    return applied
