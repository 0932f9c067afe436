"""`powercontext db upgrade` as an operator runs it, on files of every kind.

On a current database it changes nothing; on a file that is not a PowerContext database, or
one of a newer schema, it exits non-zero with a one-line reason and leaves the file byte for
byte as it was. The files of other applications include ones that keep their own
`schema_migrations` table (Rails, golang-migrate, Ecto all name it so): that name alone
does not make a database PowerContext's.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from powercontext.cli.app import app
from powercontext.memory import RememberMemoryRequest
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore

URL = "POWERCONTEXT_SERVER_DATABASE_URL"


def _upgrade(url: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["db", "upgrade"], env={URL: url})
    return result.exit_code, result.output


def _files(db: Path) -> dict[str, str]:
    """Every file of the database (main, -wal, -shm, cache) with the hash of its bytes."""
    return {
        str(path.relative_to(db.parent)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(db.parent.rglob("*"))
        if path.is_file()
    }


def _make(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(db)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def _written(db: Path) -> None:
    """A database of the current version holding one entry."""

    async def write() -> None:
        async with await SqliteMemoryStore.open(db) as store:
            memory = MemoryService(store).for_scope("s")
            await memory.remember(RememberMemoryRequest(text="kept for years"))

    asyncio.run(write())


# The CLI runs its own event loop, so these tests are not coroutines.
def test_upgrading_a_current_sqlite_database_changes_no_byte(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    _written(db)
    before = _files(db)
    code, output = _upgrade(f"sqlite:///{db}")
    assert code == 0, output
    assert "schema is current" in output
    assert _files(db) == before


_RAILS = (
    "CREATE TABLE schema_migrations (version varchar NOT NULL PRIMARY KEY)",
    "CREATE TABLE ar_internal_metadata (key varchar PRIMARY KEY, value varchar)",
    "CREATE TABLE users (id integer PRIMARY KEY, name varchar)",
    "INSERT INTO schema_migrations VALUES ('20240101000000'), ('20240202000000')",
)
_GO_MIGRATE = (
    "CREATE TABLE schema_migrations (version uint64, dirty bool)",
    "CREATE TABLE users (id integer PRIMARY KEY)",
    "INSERT INTO schema_migrations VALUES (2, 0)",
)
_GO_MIGRATE_EMPTY = ("CREATE TABLE schema_migrations (version uint64, dirty bool)",)
_SAME_SHAPE = (  # our bookkeeping table's very shape, but none of our tables beside it
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    "CREATE TABLE invoices (id integer PRIMARY KEY)",
    "INSERT INTO schema_migrations VALUES (1, '2024-01-01')",
)
_PLAIN = ("CREATE TABLE users (id integer PRIMARY KEY)",)


@pytest.mark.parametrize(
    "statements",
    [_RAILS, _GO_MIGRATE, _GO_MIGRATE_EMPTY, _SAME_SHAPE, _PLAIN],
    ids=["rails", "golang-migrate", "golang-migrate-empty", "same-shape", "plain"],
)
def test_another_applications_sqlite_file_is_refused_untouched(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    db = tmp_path / "app.db"
    _make(db, *statements)
    before = _files(db)
    code, output = _upgrade(f"sqlite:///{db}")
    assert code == 1, output
    assert "another application" in output, output
    assert "newer" not in output  # an upgrade of PowerContext would not help
    assert _files(db) == before


def _newer(db: Path) -> None:
    _make(db, "INSERT INTO schema_migrations (version, applied_at) VALUES (999, 'later')")


def _text(db: Path) -> None:
    db.write_text("notes, not a database\n")


@pytest.mark.parametrize("spoil", [_newer, _text], ids=["newer-schema", "text-file"])
def test_a_file_upgrade_cannot_handle_is_refused_untouched(
    tmp_path: Path, spoil: Callable[[Path], None]
) -> None:
    db = tmp_path / "memory.db"
    _written(db)
    spoil(db)
    before = _files(db)
    code, output = _upgrade(f"sqlite:///{db}")
    assert code == 1, output
    assert len([line for line in output.splitlines() if line.strip()]) == 1, output
    assert ("newer than" in output) if spoil is _newer else ("not a SQLite database" in output)
    assert _files(db) == before


def _pg_url(tmp_path: Path, search_path: str, *setup: str) -> str:
    """A URL whose search_path is `search_path`, after running `setup` in the database."""
    import psycopg

    from tests import pg_server

    # The shared test database, with pgvector; the schema it hands this directory stays
    # unmigrated (this test works in schemas of its own), so a later test that gets it
    # creates its tables afresh instead of emptying tables that were never made.
    asyncio.run(pg_server.database_url(tmp_path, unmigrated=True))
    database = pg_server.url(pg_server.DATABASE)
    with psycopg.connect(database, autocommit=True) as conn:
        for statement in setup:
            conn.execute(statement)
    return f"{database}&options=" + quote(f"-csearch_path={search_path}")


def _pg_tables(url: str, schema: str) -> list[tuple[str, str]]:
    import psycopg

    from powercontext.storage.postgres.connection import split_url

    with psycopg.connect(split_url(url)[0], autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = %s ORDER BY table_name, ordinal_position",
            (schema,),
        ).fetchall()
    return [(str(table), str(column)) for table, column in rows]


_RAILS_APP = (
    "DROP SCHEMA IF EXISTS audit_app CASCADE",
    "DROP SCHEMA IF EXISTS audit_pc CASCADE",
    "CREATE SCHEMA audit_app",
    "CREATE SCHEMA audit_pc",
    "CREATE TABLE audit_app.schema_migrations (version varchar PRIMARY KEY)",
    "INSERT INTO audit_app.schema_migrations VALUES ('20240101000000')",
    "CREATE TABLE audit_app.users (id integer PRIMARY KEY)",
)


@pytest.mark.postgres
def test_postgres_in_its_own_schema_beside_an_apps_schema_migrations(tmp_path: Path) -> None:
    """docs/postgres.md: a schema of its own first on the search path. Another application's
    `schema_migrations` further along the path (Rails keeps one in `public`) was read as
    PowerContext's, and no upgrade could ever succeed."""
    url = _pg_url(tmp_path, "audit_pc,audit_app,public", *_RAILS_APP)
    app_tables = _pg_tables(url, "audit_app")
    code, output = _upgrade(url)
    assert code == 0, output
    assert "applied migrations: 1," in output
    code, output = _upgrade(url)
    assert (code, output.strip()) == (0, "schema is current; nothing to apply")
    assert ("schema_migrations", "applied_at") in _pg_tables(url, "audit_pc")
    assert _pg_tables(url, "audit_app") == app_tables


@pytest.mark.postgres
def test_postgres_schema_holding_an_apps_schema_migrations_is_refused(tmp_path: Path) -> None:
    url = _pg_url(tmp_path, "audit_app,public", *_RAILS_APP)
    before = _pg_tables(url, "audit_app")
    code, output = _upgrade(url)
    assert code == 1, output
    assert "another application" in output and "newer" not in output, output
    assert len([line for line in output.splitlines() if line.strip()]) == 1, output
    assert _pg_tables(url, "audit_app") == before
