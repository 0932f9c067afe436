"""One place that turns psycopg exceptions into domain errors; none escapes the adapter.

The message is one line naming the operation (and, when connecting, the URL without its
password), the condition, what to do, and the SQLSTATE with the server's first line: an
operator reads it in the CLI's error line or the server's log.
"""

from __future__ import annotations

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolClosed, PoolTimeout

from powercontext.memory.errors import StorageError

_RETRY = "retry; the pool replaces lost connections by itself"

# (SQLSTATE or its prefix, what happened, what to do); the longest matching prefix wins.
_BY_STATE: dict[str, tuple[str, str]] = {
    "08": ("the connection to the database server was lost", _RETRY),
    "28": (
        "the database rejected the user name or password",
        "fix the credentials in the database URL",
    ),
    "3D": ("the database does not exist", "create it or fix the database name in the URL"),
    "42501": (
        "the database role lacks a privilege this operation needs",
        "grant it to the URL's role (see docs/postgres.md)",
    ),
    "53": ("the database server ran out of a resource", "see the server's log; then retry"),
    "53100": ("the database server's disk is full", "free space on the server; then retry"),
    "53300": (
        "the database server has no free connection slots",
        "raise max_connections or lower pool_max_size across the servers",
    ),
    "57014": (
        "the statement was cancelled (statement_timeout?)",
        "retry, or raise statement_timeout for the URL's role",
    ),
    "55P03": (
        "a lock was not granted within lock_timeout",
        "another transaction held it; retry, or raise lock_timeout",
    ),
    "57P": ("the database server closed the connection (restart, failover or kill)", _RETRY),
    "25006": (
        "the database is read-only (a hot standby?)",
        "point the database URL at the primary",
    ),
    "40": (
        "the server rolled the transaction back (serialization failure or deadlock)",
        "nothing of it was applied; retry",
    ),
}

# A failure to connect carries no SQLSTATE: libpq's text tells the cause (its first match).
_BY_TEXT = (
    (
        ("password authentication failed", "no password supplied", 'role "'),
        "the database rejected the user name or password",
        "fix the credentials in the database URL",
    ),
    (
        ("does not exist",),
        "the database does not exist",
        "create it or fix the database name in the URL",
    ),
    (
        ("too many clients", "remaining connection slots"),
        "the database server has no free connection slots",
        "raise max_connections or lower pool_max_size across the servers",
    ),
    (
        ("the database system is", "shutting down"),
        "the database server is starting up or shutting down",
        "retry in a moment",
    ),
    (
        ("failed to resolve host", "could not translate host name"),
        "the database host name does not resolve",
        "fix the host in the database URL",
    ),
    (
        ("connection refused", "no such file or directory", "timeout expired", "timed out"),
        "no PostgreSQL server answers at the URL's host and port",
        "start the server, or fix the host, port or socket directory in the URL",
    ),
    (
        ("server does not support ssl", "certificate", "ssl negotiation"),
        "the TLS handshake failed",
        "check sslmode and the certificates in the URL",
    ),
)


def _explain(exc: psycopg.Error) -> str:
    if isinstance(exc, PoolTimeout):
        return (
            "no pooled connection became free or could be opened in time; the server is "
            "unreachable, or more operations ran at once than pool_max_size allows: check the "
            "server, or raise pool_max_size"
        )
    if isinstance(exc, PoolClosed):
        return "the store is closed; open it again"
    state = exc.sqlstate or ""
    for prefix, (what, advice) in sorted(_BY_STATE.items(), key=lambda item: -len(item[0])):
        if state.startswith(prefix):
            return f"{what}; {advice}"
    if isinstance(exc, psycopg.OperationalError):
        text = str(exc).lower()
        for markers, what, advice in _BY_TEXT:
            if any(marker in text for marker in markers):
                return f"{what}; {advice}"
        return f"the database connection failed; {_RETRY}"
    return "the storage backend failed"


def storage_error(exc: psycopg.Error, doing: str) -> StorageError:
    """A StorageError naming what failed, why and what to do; the caller chains the original."""
    state = exc.sqlstate or type(exc).__name__
    # The first line only: later ones (DETAIL) may quote stored values.
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StorageError(
        f"PostgreSQL storage failed while {doing}: {_explain(exc)} ({state}: {detail})"
    )


def is_unique_violation(exc: BaseException) -> bool:
    return isinstance(exc, pg_errors.UniqueViolation)
