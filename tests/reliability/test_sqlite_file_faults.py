"""The embedded store against files it should not write or cannot use, and a kill mid-erasure.

Real files and real processes: another application's SQLite database is refused before a
byte of it changes; every failure to open or write names the file and what to do in one line
(through the CLI, in its own process); a process SIGKILLed between an erasure's commit and its
scrub leaves none of the erased words in the file once the store is reopened and closed.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from powercontext.memory import StorageError
from powercontext.memory.ports import CommitRequest
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.connections import ConnectionOptions
from powercontext.storage.sqlite.schema import SCHEMA_VERSION
from tests.integration.planned import planned_adds

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "powercontext.cli"]
SECRET = "zqxsecretword"


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{db}"}
    env["POWERCONTEXT_INFERENCE_EMBEDDING_MODEL"] = "none"
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr  # one line, no traceback
    return lines[0]


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _holding(directory: Path, marker: bytes) -> list[str]:
    """The files under `directory` (database, -wal, -shm, snapshots) whose bytes hold `marker`."""
    return sorted(p.name for p in directory.rglob("*") if p.is_file() and marker in p.read_bytes())


def _other_application(path: Path) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('alice')")
    conn.commit()
    conn.close()
    return path.read_bytes()


async def test_another_applications_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "crm.sqlite3"
    before = _other_application(path)
    with pytest.raises(StorageError, match="another application") as caught:
        await SqliteMemoryStore.open(path)
    assert str(path) in str(caught.value) and "customers" in str(caught.value)
    # Not a table added, not even the header's journal mode switched to WAL.
    assert path.read_bytes() == before
    assert _names(tmp_path) == ["crm.sqlite3"]


def test_the_cli_refuses_another_applications_database_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "crm.sqlite3"
    before = _other_application(path)
    line = _error_line(_cli(path, "memory", "remember", "--local", "-s", "s", "hello"))
    assert str(path) in line and "new file" in line
    assert path.read_bytes() == before


async def test_a_new_file_and_our_own_database_still_open(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    path.touch()  # an empty file is a new database, not another application's
    store = await SqliteMemoryStore.open(path)
    await store.commit(CommitRequest("s", None, planned_adds(["first entry"])))
    await store.close()
    store = await SqliteMemoryStore.open(path)
    try:
        assert await store.head("s") == 1
    finally:
        await store.close()


def test_open_failures_name_the_file_and_what_to_do(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all " * 100)
    line = _error_line(_cli(garbage, "memory", "head", "--local", "-s", "s"))
    assert str(garbage) in line and "point the database URL" in line

    newer = tmp_path / "newer.db"
    assert _cli(newer, "memory", "remember", "--local", "-s", "s", "x").returncode == 0
    raw = sqlite3.connect(newer)
    raw.execute("INSERT INTO schema_migrations VALUES (?, 'later')", (SCHEMA_VERSION + 1,))
    raw.commit()
    raw.close()
    line = _error_line(_cli(newer, "memory", "head", "--local", "-s", "s"))
    assert str(newer) in line and "upgrade PowerContext" in line

    directory = tmp_path / "a-directory"
    directory.mkdir()
    line = _error_line(_cli(directory, "memory", "head", "--local", "-s", "s"))
    assert str(directory) in line and "not a directory" in line


async def test_a_refused_write_names_the_file_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = await SqliteMemoryStore.open(path)
    await store.commit(CommitRequest("s", None, planned_adds(["first entry"])))
    await store.close()
    frozen = await SqliteMemoryStore.open(
        path, options=ConnectionOptions(pragmas={"query_only": "ON"})
    )
    try:
        with pytest.raises(StorageError) as caught:
            await frozen.commit(CommitRequest("s", 1, planned_adds(["second entry"], start=1)))
        message = str(caught.value)
        assert str(path) in message and "writable" in message and "SQLITE_READONLY" in message
        assert "\n" not in message
    finally:
        await frozen.close()


_ERASE_THEN_DIE = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from powercontext.memory.ports import ErasureRequest
    from powercontext.storage.sqlite import SqliteMemoryStore

    async def main(path):
        store = await SqliteMemoryStore.open(path)
        head = await store.head("s")
        result = await store.erase(ErasureRequest("s", head, ["e0"], actor=None, reason=None))
        assert result.erased, result
        # Killed where the service would call store.scrub next.
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_an_erasure_killed_before_its_scrub_leaves_no_erased_words(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = await SqliteMemoryStore.open(path)
    kept = [f"kept entry {i} about gardening" for i in range(200)]
    await store.commit(CommitRequest("s", None, planned_adds([f"{SECRET} and more", *kept])))
    await store.close()
    assert SECRET.encode() in path.read_bytes()  # the control: the word is in the file

    died = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", _ERASE_THEN_DIE, str(path)],
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert died.returncode == -9

    store = await SqliteMemoryStore.open(path)  # recovers the WAL; close checkpoints it
    try:
        assert await store.head("s") == 2
    finally:
        await store.close()
    assert _holding(tmp_path, SECRET.encode()) == []
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO entry_fts (entry_fts) VALUES ('integrity-check')")
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
