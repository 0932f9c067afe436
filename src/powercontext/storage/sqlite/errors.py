"""One place that turns sqlite3 exceptions into domain errors; none escapes the adapter."""

from __future__ import annotations

import sqlite3

from powercontext.memory.errors import StorageError

_EXPLANATIONS = {
    "SQLITE_FULL": "the disk (or the database's size limit) is full",
    "SQLITE_READONLY": "the database is read-only",
    "SQLITE_IOERR": "a disk I/O error occurred",
    "SQLITE_CANTOPEN": "the database file cannot be opened",
    "SQLITE_CORRUPT": "the database file is corrupt",
    "SQLITE_NOTADB": "the file is not a SQLite database",
    "SQLITE_BUSY": "the database stayed locked by another connection past the busy timeout",
    "SQLITE_LOCKED": "the database table is locked",
    "SQLITE_PERM": "permission denied",
    "SQLITE_NOMEM": "SQLite ran out of memory",
}


def _explain(exc: sqlite3.Error) -> str:
    name = getattr(exc, "sqlite_errorname", None) or ""
    for prefix, text in _EXPLANATIONS.items():
        if name == prefix or name.startswith(prefix + "_"):
            return text
    return "the storage backend failed"


def storage_error(exc: sqlite3.Error, doing: str) -> StorageError:
    """A StorageError naming what failed and why; the caller chains the original."""
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    return StorageError(f"SQLite storage failed while {doing}: {_explain(exc)} ({name}: {exc})")
