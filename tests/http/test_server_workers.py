"""`powercontext server run --workers 2`: several processes on one port and one database.

Writes without `expected_revision` land from every process without a conflict, and a search
served by any process sees what another process wrote just before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests import pg_server
from tests.http.processes import free_port, wait_until_healthy

WRITES = 40


def _workers_of(pid: int) -> list[int]:
    """Child processes started by uvicorn's supervisor (multiprocessing spawn)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    found = []
    for child in children:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"spawn_main" in cmdline:
            found.append(int(child))
    return found


def _run(database_url: str) -> None:
    port = free_port()
    env = os.environ | {
        "POWERCONTEXT_SERVER_DATABASE_URL": database_url,
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
    }
    command = [sys.executable, "-m", "powercontext.cli", "server", "run"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(process, base, seconds=60)
        assert len(_workers_of(process.pid)) == 2

        def remember(i: int) -> int:
            # A fresh connection per request, so the kernel spreads them over the workers.
            response = httpx.post(
                f"{base}/v1/memory/remember",
                json={"scope_id": "shared", "kind": "fact", "text": f"note number{i} kept"},
                timeout=60,
            )
            return response.status_code

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(remember, range(WRITES))) == [200] * WRITES

        for i in range(WRITES):
            written = httpx.post(
                f"{base}/v1/memory/remember",
                json={"scope_id": "fresh", "kind": "fact", "text": f"marker{i} now"},
                timeout=30,
            )
            assert written.status_code == 200
            found = httpx.post(
                f"{base}/v1/memory/search",
                json={"scope_id": "fresh", "query": f"marker{i}", "mode": "fts"},
                timeout=30,
            ).json()
            assert [hit["text"] for hit in found["hits"]] == [f"marker{i} now"]
        listed = httpx.post(
            f"{base}/v1/memory/entries/list", json={"scope_id": "shared", "limit": 100}
        ).json()
        assert len(listed["entries"]) == WRITES
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode in (0, -signal.SIGTERM), stderr


def test_two_workers_share_a_sqlite_file(tmp_path: Path) -> None:
    _run(f"sqlite:///{tmp_path / 'workers.db'}")


@pytest.mark.postgres
async def test_two_workers_share_a_postgres_database(tmp_path: Path) -> None:
    url = await pg_server.database_url(tmp_path)
    _run(url)


def test_workers_refuse_an_in_memory_database() -> None:
    env = os.environ | {"POWERCONTEXT_SERVER_DATABASE_URL": "sqlite:///:memory:"}
    done = subprocess.run(
        [sys.executable, "-m", "powercontext.cli", "server", "run", "--workers", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "in-memory SQLite database belongs to one process" in done.stderr
    assert "Traceback" not in done.stderr
