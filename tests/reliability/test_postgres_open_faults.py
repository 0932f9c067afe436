"""The PostgreSQL store against servers it cannot use, as an operator meets them at open.

A real PostgreSQL (tests/pg_server.py) with one password-checked role: every failure to open
is one line that names the URL without its password, the condition and what to do, and the
password appears in no error and no log record, also when the server rejects it later on.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import psycopg
import pytest

from powercontext.memory import StorageError
from powercontext.storage.postgres import PostgresMemoryStore, PostgresOptions
from powercontext.storage.postgres.connection import split_url
from tests import pg_server

pytestmark = pytest.mark.postgres

ROLE = "pc_fault_pw"
SECRET = "zq-hunter2-secret"
NO_VECTOR_DB = "pc_fault_novector"
VECTOR_DB = "pc_fault_vector"
_prepared = False


def _socket_dir() -> str:
    return parse_qs(urlsplit(pg_server.url()).query)["host"][0]


def _prepare() -> None:
    """A login role that must give its password (scram over the socket; every other role
    keeps trust), and two databases it owns: one without the vector extension, one with."""
    global _prepared
    if _prepared:
        return
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        for database in (NO_VECTOR_DB, VECTOR_DB):
            conn.execute(f"DROP DATABASE IF EXISTS {database}")
        conn.execute(f"DROP ROLE IF EXISTS {ROLE}")
        conn.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{SECRET}'")
        for database in (NO_VECTOR_DB, VECTOR_DB):
            conn.execute(f"CREATE DATABASE {database} OWNER {ROLE}")
        row = conn.execute("SHOW hba_file").fetchone()
        assert row is not None
        hba = Path(str(row[0]))
        line = f"local all {ROLE} scram-sha-256\n"
        if line not in hba.read_text():
            hba.write_text(line + hba.read_text())  # the first matching line wins
        conn.execute("SELECT pg_reload_conf()")
    with psycopg.connect(pg_server.url(VECTOR_DB), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")  # as the superuser, as docs/postgres.md says
    _prepared = True


def _url(database: str, password: str = SECRET) -> str:
    return f"postgresql://{ROLE}:{quote(password)}@/{database}?host={quote(_socket_dir())}"


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG)
    yield caplog


def _leaked(logs: pytest.LogCaptureFixture, secret: str) -> list[str]:
    return [
        record.getMessage()
        for record in logs.records
        if secret in record.getMessage() or secret in (record.exc_text or "")
    ]


async def _open_error(url: str, options: PostgresOptions | None = None) -> str:
    with pytest.raises(StorageError) as caught:
        store = await PostgresMemoryStore.open(url, options=options)
        await store.close()
    assert isinstance(caught.value.__cause__, psycopg.Error)  # chained, not swallowed
    message = str(caught.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize(
    ("case", "condition", "advice"),
    [
        ("wrong password", "rejected the user name or password", "fix the credentials"),
        ("password parameter", "rejected the user name or password", "fix the credentials"),
        ("missing database", "database does not exist", "create it"),
        ("nothing listening", "no PostgreSQL server answers", "start the server"),
        ("no vector extension", "privilege this role lacks", "run it once as a superuser"),
    ],
)
async def test_open_failures_are_one_line_with_the_url_and_no_password(
    case: str, condition: str, advice: str, logs: pytest.LogCaptureFixture
) -> None:
    _prepare()
    wrong = "wrong-" + SECRET
    url = {
        "wrong password": _url("postgres", wrong),
        "password parameter": (
            f"postgresql:///postgres?host={quote(_socket_dir())}&user={ROLE}&password={wrong}"
        ),
        "missing database": _url("pc_fault_nowhere"),
        "nothing listening": f"postgresql://{ROLE}:{SECRET}@127.0.0.1:1/memory",
        "no vector extension": _url(NO_VECTOR_DB),
    }[case]
    message = await _open_error(url, PostgresOptions(timeout_seconds=2))
    assert condition in message and advice in message, message
    assert SECRET not in message, message
    if case == "no vector extension":
        assert NO_VECTOR_DB in message and f"{ROLE}:***@" in message, message
    elif case == "password parameter":
        assert "password=***" in message, message
    else:
        assert "***@" in message, message
    assert _leaked(logs, SECRET) == []


async def test_a_unix_socket_url_without_a_host_part_opens(tmp_path: Path) -> None:
    """`postgresql:///db?host=/run/postgresql` (the documented socket form) once reached
    libpq as `postgresql:/db?...`, an invalid connection string."""
    shared = urlsplit(await pg_server.database_url(tmp_path))
    url = f"postgresql://{shared.path}?{shared.query}&user=postgres"
    assert url.startswith("postgresql:///")
    store = await PostgresMemoryStore.open(url)
    try:
        assert await store.scope_ids() == []
    finally:
        await store.close()


async def test_a_password_changed_while_open_fails_clearly_and_never_logs_it(
    logs: pytest.LogCaptureFixture,
) -> None:
    _prepare()
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        store = await PostgresMemoryStore.open(
            _url(VECTOR_DB) + "&pool_max_size=1",
            options=PostgresOptions(timeout_seconds=1),
        )
        try:
            admin.execute(f"ALTER ROLE {ROLE} PASSWORD 'rotated-{SECRET}'")
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (ROLE,),
            )
            with pytest.raises(StorageError) as first:
                await store.scope_ids()  # the dead pooled connection
            with pytest.raises(StorageError, match="raise pool_max_size") as second:
                await store.scope_ids()  # the pool cannot log in any more
        finally:
            admin.execute(f"ALTER ROLE {ROLE} PASSWORD '{SECRET}'")
            await store.close()
    for caught in (first, second):
        assert "\n" not in str(caught.value) and SECRET not in str(caught.value)
    assert any("password authentication failed" in r.getMessage() for r in logs.records)
    assert _leaked(logs, SECRET) == []


def test_the_cli_reports_a_rejected_password_in_one_line() -> None:
    _prepare()
    env = {
        **os.environ,
        "POWERCONTEXT_SERVER_DATABASE_URL": _url("postgres", "wrong-" + SECRET),
        "POWERCONTEXT_INFERENCE_EMBEDDING_MODEL": "none",
    }
    result = subprocess.run(
        [sys.executable, "-m", "powercontext.cli", "db", "upgrade"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr  # no traceback
    assert "fix the credentials" in lines[0] and f"{ROLE}:***@" in lines[0], lines[0]
    assert SECRET not in result.stderr + result.stdout


async def test_several_server_settings_in_options_all_reach_the_server(tmp_path: Path) -> None:
    """libpq reads `+` literally: a space re-encoded as `+` once glued the second setting
    onto the first (here: search_path `...,public+-cstatement_timeout=4321`, no vector type)."""
    url = await pg_server.database_url(tmp_path) + quote(" -cstatement_timeout=4321")
    store = await PostgresMemoryStore.open(url)
    try:
        assert await store.scope_ids() == []
    finally:
        await store.close()
    with psycopg.connect(split_url(url)[0]) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("4321ms",)
