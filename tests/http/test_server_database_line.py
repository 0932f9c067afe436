"""`server run` names the store it opened at startup: the SQLite file as an absolute path, or
the PostgreSQL URL without its password, so an operator reading the log knows which database
this server writes to (`config show` prints only the setting)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from powercontext.server.runner import database_line
from tests.http.processes import free_port, wait_until_healthy


def _database_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if re.search(r" database (SQLite|PostgreSQL) ", line)]


def test_the_startup_log_names_the_sqlite_file_by_its_absolute_path(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "OPENAI_"))}
    env |= {
        "POWERCONTEXT_HOME": str(tmp_path / "home"),
        # Relative: the server resolves it against where it started, and the log says where.
        "POWERCONTEXT_SERVER_DATABASE_URL": "sqlite:///named.db",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash:64",
    }
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "powercontext.cli", "server", "run", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}")
    finally:
        process.send_signal(signal.SIGTERM)
        _, log = process.communicate(timeout=20)
    assert (tmp_path / "named.db").exists()
    lines = _database_lines(log)
    assert len(lines) == 1, log
    # The child's working directory is the real path (a symlinked temp directory resolved).
    assert lines[0].endswith(f"database SQLite {tmp_path.resolve() / 'named.db'}")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://user:secret@127.0.0.1:5432/db",
            "postgresql://user:********@127.0.0.1:5432/db",
        ),
        (
            "postgres://user:secret@db.internal/memory",
            "postgres://user:********@db.internal/memory",
        ),
        (
            "postgresql:///db?host=/run/postgresql&password=secret&sslmode=require",
            "postgresql:///db?host=/run/postgresql&password=********&sslmode=require",
        ),
        ("postgresql://user@127.0.0.1/db", "postgresql://user@127.0.0.1/db"),
    ],
)
def test_a_postgresql_url_is_shown_without_its_password(url: str, shown: str) -> None:
    line = database_line(url)
    assert line == f"database PostgreSQL {shown}"
    assert "secret" not in line


def test_sqlite_in_memory_and_home_relative_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "in memory" in database_line("sqlite:///:memory:")
    monkeypatch.setenv("HOME", "/home/someone")
    assert database_line("sqlite:///~/pc.db") == "database SQLite /home/someone/pc.db"
    assert database_line("sqlite:////var/lib/pc/../pc.db") == "database SQLite /var/lib/pc.db"
