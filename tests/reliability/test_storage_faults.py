"""Disk full and read-only databases: a clear error, no corruption, recovery.

Real faults where this machine allows them (root: a 1 MiB tmpfs that fills up and is then
grown; `chattr +i` on a live database file, which refuses writes even to root; a tmpfs
remounted read-only), and the same conditions through SQLite's own limits everywhere else
(`max_page_count`, `query_only`, set with ConnectionOptions.pragmas). Each case checks the
error (StorageError; over HTTP 503 `storage_unavailable` with a message naming the cause),
that every acknowledged write is intact (`PRAGMA integrity_check`, the exact texts), that
reads keep working, and that writes succeed again once the condition is gone.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest

from powercontext import open_runtime
from powercontext.config import ServerSettings
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest, StorageError
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime
from powercontext.server import create_app
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.connections import ConnectionOptions
from tests.http.live import live_server
from tests.integration.conftest import sqlite_settings

FILLER = " ".join(["filler"] * 140)  # about 1 KiB an entry


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False)


@contextmanager
def tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of `size`; skips when this process may not mount. Always unmounted."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mounted = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mountpoint))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        if _run("umount", str(mountpoint)).returncode != 0:
            _run("umount", "-l", str(mountpoint))  # lazy: detach now, free when unused


def integrity(db: Path) -> list[tuple[str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchall()
    finally:
        conn.close()


def _remember_until_full(client: httpx.Client, scope: str) -> tuple[list[str], httpx.Response]:
    acknowledged: list[str] = []
    for batch in range(500):
        texts = [f"batch {batch} entry {j} {FILLER}" for j in range(20)]
        response = client.post(
            "/v1/memory/remember",
            json={"scope_id": scope, "entries": [{"text": t} for t in texts]},
        )
        if response.status_code != 200:
            return acknowledged, response
        acknowledged += texts
    raise AssertionError("the tiny filesystem never filled up")


def _stored_texts(client: httpx.Client, scope: str) -> list[str]:
    texts: list[str] = []
    cursor = None
    while True:
        body = {"scope_id": scope, "limit": 1000} | ({"cursor": cursor} if cursor else {})
        page = client.post("/v1/memory/entries/list", json=body).json()
        texts += [entry["text"] for entry in page["entries"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return texts


def test_a_full_disk_fails_clearly_keeps_every_write_and_recovers(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "tiny", "1m") as mount:
        db = mount / "memory.db"
        settings = sqlite_settings(db)
        with (
            live_server(create_app(settings)) as server,
            httpx.Client(base_url=server.url, timeout=30) as client,
        ):
            acknowledged, refused = _remember_until_full(client, "full")
            assert acknowledged, "the first batch should fit"
            assert refused.status_code == 503, refused.text
            error = refused.json()["error"]
            assert error["code"] == "storage_unavailable"
            assert error["message"] == "the storage is full; the write was not applied"
            assert "SQLITE" not in refused.text and "Traceback" not in refused.text
            assert integrity(db) == [("ok",)]
            assert _stored_texts(client, "full") == acknowledged  # exactly; nothing partial
            found = client.post(
                "/v1/memory/search", json={"scope_id": "full", "query": "batch 0 entry 3"}
            )
            assert found.status_code == 200 and found.json()["hits"]  # reads still work
            assert _run("mount", "-o", "remount,size=8m", str(mount)).returncode == 0
            again = client.post(
                "/v1/memory/remember", json={"scope_id": "full", "text": "space is back"}
            )
            assert again.status_code == 200, again.text
            assert _stored_texts(client, "full") == [*acknowledged, "space is back"]
        assert integrity(db) == [("ok",)]


async def test_the_size_limit_pragma_fails_clearly_and_recovers(tmp_path: Path) -> None:
    """The portable disk-full: SQLite's max_page_count on every connection of the store."""
    db = tmp_path / "memory.db"
    async with open_runtime(sqlite_settings(db)) as runtime:
        await runtime.memory.for_scope("cap").remember(RememberMemoryRequest(text="seed"))
    pages = sqlite3.connect(db).execute("PRAGMA page_count").fetchone()[0]
    acknowledged = ["seed"]
    options = ConnectionOptions(pragmas={"max_page_count": pages + 40})
    async with (
        await SqliteMemoryStore.open(db, options=options) as store,
        open_runtime(sqlite_settings(db), store=store) as runtime,
    ):
        memory = runtime.memory.for_scope("cap")
        with pytest.raises(StorageError, match="full"):
            for batch in range(200):
                texts = [f"batch {batch} entry {j} {FILLER}" for j in range(10)]
                await memory.remember_many([RememberMemoryRequest(text=t) for t in texts])
                acknowledged += texts
        assert [e.text for e in (await memory.list(limit=1000)).entries] == acknowledged
        page = await memory.search(SearchMemoryRequest(query="seed"))
        assert page.hits and page.hits[0].text == "seed"
    assert integrity(db) == [("ok",)]
    async with open_runtime(sqlite_settings(db)) as runtime:  # the limit is lifted
        memory = runtime.memory.for_scope("cap")
        await memory.remember(RememberMemoryRequest(text="room again"))
        texts = [e.text for e in (await memory.list(limit=1000)).entries]
    assert texts == [*acknowledged, "room again"]


@asynccontextmanager
async def _query_only(db: Path) -> AsyncIterator[Runtime]:
    options = ConnectionOptions(pragmas={"query_only": "ON"})
    async with (
        await SqliteMemoryStore.open(db, options=options) as store,
        open_runtime(sqlite_settings(db), store=store) as runtime,
    ):
        yield runtime


def test_a_read_only_connection_is_named_over_http(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"

    def factory(
        settings: ServerSettings, observer: SearchObserver
    ) -> AbstractAsyncContextManager[Runtime]:
        return _query_only(db)

    async def seed() -> None:
        async with open_runtime(sqlite_settings(db)) as runtime:
            await runtime.memory.for_scope("ro").remember(RememberMemoryRequest(text="kept"))

    asyncio.run(seed())
    app = create_app(sqlite_settings(db), runtime_factory=factory)
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        refused = client.post("/v1/memory/remember", json={"scope_id": "ro", "text": "new"})
        assert refused.status_code == 503
        assert refused.json()["error"] == {
            "code": "storage_unavailable",
            "message": "the storage is read-only; the write was not applied",
            "details": {},
        }
        assert _stored_texts(client, "ro") == ["kept"]
    assert integrity(db) == [("ok",)]


def test_a_database_made_immutable_while_serving_fails_clearly_and_recovers(
    tmp_path: Path,
) -> None:
    """`chattr +i` refuses every write, even root's and even through open descriptors."""
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("chattr +i needs root")
    db = tmp_path / "memory.db"
    with (
        live_server(create_app(sqlite_settings(db))) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        kept = client.post("/v1/memory/remember", json={"scope_id": "im", "text": "kept"})
        assert kept.status_code == 200
        # The main file and the WAL; the shared-memory index is mapped, and stays writable.
        files = [str(path) for path in (db, Path(f"{db}-wal")) if path.exists()]
        locked = _run("chattr", "+i", *files)
        if locked.returncode != 0:
            pytest.skip(f"chattr +i is not supported here: {locked.stderr.strip()}")
        try:
            refused = client.post("/v1/memory/remember", json={"scope_id": "im", "text": "new"})
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "storage_unavailable"
            assert "write was not applied" in refused.json()["error"]["message"]
            assert _stored_texts(client, "im") == ["kept"]  # reads still work
        finally:
            _run("chattr", "-i", *files)
        again = client.post("/v1/memory/remember", json={"scope_id": "im", "text": "after"})
        assert again.status_code == 200, again.text
        assert _stored_texts(client, "im") == ["kept", "after"]
    assert integrity(db) == [("ok",)]


async def test_a_read_only_filesystem_refuses_to_open_then_opens(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "4m") as mount:
        db = mount / "memory.db"
        async with open_runtime(sqlite_settings(db)) as runtime:
            await runtime.memory.for_scope("fs").remember(RememberMemoryRequest(text="kept"))
        assert _run("mount", "-o", "remount,ro", str(mount)).returncode == 0
        try:
            with pytest.raises(StorageError, match=r"cannot be opened|read-only"):
                async with open_runtime(sqlite_settings(db)):
                    pass
        finally:
            _run("mount", "-o", "remount,rw", str(mount))
        async with open_runtime(sqlite_settings(db)) as runtime:
            memory = runtime.memory.for_scope("fs")
            await memory.remember(RememberMemoryRequest(text="writable again"))
            texts = [e.text for e in (await memory.list()).entries]
        assert texts == ["kept", "writable again"]
        assert integrity(db) == [("ok",)]
