"""Storage adapters behind the MemoryStore port, chosen by a database URL."""

from __future__ import annotations

from powercontext.extras import install_hint
from powercontext.memory.errors import ConfigurationError
from powercontext.memory.ports import MemoryStore

URL_VARIABLE = "POWERCONTEXT_SERVER_DATABASE_URL"
_SQLITE = "sqlite:///"
_POSTGRES = ("postgresql://", "postgres://")


def sqlite_path(url: str) -> str:
    """`sqlite:///relative.db`, `sqlite:////absolute.db` or `sqlite:///:memory:` -> the path."""
    path = url[len(_SQLITE) :]
    if not path:
        raise ConfigurationError(f"{URL_VARIABLE}: {url!r} names no database file")
    return path


def postgres_missing(exc: ImportError) -> ConfigurationError:
    """What to say when the URL names PostgreSQL and its adapter cannot be imported."""
    return ConfigurationError(
        f"{URL_VARIABLE} names PostgreSQL, but its backend is not available ({exc}); "
        f"install the postgres extra: {install_hint('postgres')}"
    )


async def open_store(url: str) -> MemoryStore:
    """Open (and migrate) the store a URL names; adapters are imported only when chosen."""
    if url.startswith(_SQLITE):
        from powercontext.storage.sqlite import SqliteMemoryStore

        return await SqliteMemoryStore.open(sqlite_path(url))
    if url.startswith(_POSTGRES):
        try:
            from powercontext.storage.postgres import PostgresMemoryStore
        except ImportError as exc:
            raise postgres_missing(exc) from exc
        store: MemoryStore = await PostgresMemoryStore.open(url)
        return store
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise ConfigurationError(
        f"{URL_VARIABLE}: unknown database URL scheme {scheme!r}; "
        "use sqlite:///PATH, sqlite:///:memory: or postgresql://..."
    )


__all__ = ["URL_VARIABLE", "open_store", "postgres_missing", "sqlite_path"]
