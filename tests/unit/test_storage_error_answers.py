"""What an HTTP client is told of a storage failure: the condition, never the file, URL or
server text (those go to the log), and no claim about a PostgreSQL write's fate."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors as pg_errors

from powercontext.memory.errors import StorageError
from powercontext.server.errors import describe
from powercontext.storage.postgres.errors import storage_error


@pytest.mark.parametrize(
    ("raised", "told"),
    [
        (psycopg.OperationalError("connection refused"), "the database server is unreachable"),
        (pg_errors.DiskFull("could not extend file"), "the database server's disk is full"),
        (pg_errors.LockNotAvailable("canceling statement due to lock timeout"), "lock timeout"),
        (pg_errors.QueryCanceled("canceling statement"), "statement timeout"),
        (pg_errors.ReadOnlySqlTransaction("read-only transaction"), "the database is read-only"),
        (pg_errors.AdminShutdown("terminating connection"), "the database connection was lost"),
    ],
)
def test_a_postgresql_failure_is_named_without_its_details(
    raised: psycopg.Error, told: str
) -> None:
    error = storage_error(raised, "committing revision 3 of scope s")
    status, code, message, _ = describe(error)
    assert (status, code) == (503, "storage_unavailable")
    assert told in message
    assert "retry" in message
    assert "not applied" not in message  # a lost COMMIT may have been applied
    assert "scope s" not in message and str(raised) not in message


def test_an_unknown_postgresql_failure_still_says_retry() -> None:
    error = storage_error(pg_errors.InternalError_("xx"), "searching")
    assert describe(error)[2] == "the database failed; retry (the server's log has the details)"


def test_sqlite_answers_are_unchanged() -> None:
    full = StorageError("SQLite storage failed while committing: SQLITE_FULL (database is full)")
    assert describe(full)[2] == "the storage is full; the write was not applied"
