"""One place that turns psycopg exceptions into domain errors; none escapes the adapter."""

from __future__ import annotations

import psycopg
from psycopg import errors as pg_errors

from powercontext.memory.errors import StorageError

_EXPLANATIONS: dict[str, str] = {
    "08": "the database server is unreachable or closed the connection",
    "28": "the database rejected the credentials",
    "3D": "the database does not exist",
    "42501": "the database role lacks a privilege this operation needs",
    "53": "the database server ran out of a resource (disk, memory or connections)",
    "57014": "the statement was cancelled (statement_timeout?)",
    "57P": "the database server is shutting down or restarting",
    "25006": "the database is read-only (a hot standby?)",
    "40": "the transaction was rolled back by the server (serialization or deadlock)",
}


def _explain(exc: psycopg.Error) -> str:
    state = exc.sqlstate or ""
    for prefix, text in sorted(_EXPLANATIONS.items(), key=lambda item: -len(item[0])):
        if state.startswith(prefix):
            return text
    if isinstance(exc, psycopg.OperationalError):
        return "the database connection failed"
    return "the storage backend failed"


def storage_error(exc: psycopg.Error, doing: str) -> StorageError:
    """A StorageError naming what failed and why; the caller chains the original."""
    state = exc.sqlstate or type(exc).__name__
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StorageError(
        f"PostgreSQL storage failed while {doing}: {_explain(exc)} ({state}: {detail})"
    )


def is_unique_violation(exc: BaseException) -> bool:
    return isinstance(exc, pg_errors.UniqueViolation)
