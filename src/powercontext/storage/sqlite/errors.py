"""One place that turns sqlite3 exceptions into domain errors; none escapes the adapter.

The message is one line naming the file, the condition and what to do about it: an operator
reads it in the CLI's error line or the server's log (HTTP clients get only the condition,
see server.errors). The SQLite error name stays in it, in parentheses, for the same reason.
"""

from __future__ import annotations

import sqlite3

from powercontext.memory.errors import StorageError

# (error name or its prefix, what happened, what to do); the most specific name first.
_EXPLANATIONS = (
    (
        "SQLITE_READONLY_DIRECTORY",
        "the database is read-only: its directory is not writable",
        "WAL mode keeps its -wal and -shm files next to it: let this user write there",
    ),
    (
        "SQLITE_FULL",
        "the disk (or the database's size limit) is full",
        "free some space; the write was not applied",
    ),
    (
        "SQLITE_READONLY",
        "the database is read-only",
        "make the file, its -wal and -shm files and its directory writable by this user",
    ),
    (
        "SQLITE_IOERR",
        "a disk I/O error occurred",
        "check the disk, free space and the file size limit (ulimit -f); the write was not applied",
    ),
    (
        "SQLITE_CANTOPEN",
        "the database file cannot be opened",
        "the path must name a file (not a directory) in a directory this user can write",
    ),
    (
        "SQLITE_CORRUPT",
        "the database file is corrupt",
        "restore it from a backup (its -wal file belongs with it)",
    ),
    (
        "SQLITE_NOTADB",
        "the file is not a SQLite database",
        "point the database URL at a PowerContext database or a new file",
    ),
    (
        "SQLITE_BUSY",
        "the database stayed locked by another connection past the busy timeout",
        "another process is writing to it; retry",
    ),
    ("SQLITE_LOCKED", "the database table is locked", "retry"),
    ("SQLITE_PERM", "permission denied", "let this user read and write the file"),
    ("SQLITE_NOMEM", "SQLite ran out of memory", "free memory and retry"),
)


def _explain(exc: sqlite3.Error) -> str:
    name = getattr(exc, "sqlite_errorname", None) or ""
    for prefix, what, advice in _EXPLANATIONS:
        if name == prefix or name.startswith(prefix + "_"):
            return f"{what}; {advice}"
    return "the storage backend failed"


def storage_error(exc: sqlite3.Error, doing: str, target: str | None = None) -> StorageError:
    """A StorageError naming what failed, on which file, why and what to do; the caller
    chains the original. `target` is left out when `doing` already names the file."""
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    where = f" on {target}" if target else ""
    detail = " ".join(str(exc).split())
    return StorageError(
        f"SQLite storage failed while {doing}{where}: {_explain(exc)} ({name}: {detail})"
    )
