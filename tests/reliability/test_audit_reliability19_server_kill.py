"""kill -9 of a real `powercontext server run` while HTTP writes are in flight, then a restart,
as an operator meets it (issue 19, black-box re-check).

The other kill tests kill a process that writes through the runtime; these kill the server
that HTTP clients talk to, each at a moment chosen by watching the database (so the kill
always lands where it matters, not wherever a timer fell):

- a streamed batch whose text committed but whose answer never left the server: the keyed
  retry answers that write (same revision, same entry ids, nothing written twice), the
  vectors it left pending are filled by the backfill with no `reindex`, and every mode then
  ranks as the same batch written afresh;
- an import killed after its first batch of 1000 lines: only whole batches are visible, and
  re-running it with `on_existing=skip` completes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.http.processes import free_port, wait_until_healthy

ENTRIES = 3_000
NDJSON = {"content-type": "application/x-ndjson"}
WORDS = "alpha beta gamma delta river mountain deploy friday server cache kernel tiger".split()


def _env(db: Path) -> dict[str, str]:
    return os.environ | {
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{db}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
    }


def _texts() -> list[str]:
    return [
        f"note {i} " + " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(1 + i % 6))
        for i in range(ENTRIES)
    ]


def _stream_body(texts: list[str]) -> bytes:
    return "".join(json.dumps({"text": text}) + "\n" for text in texts).encode()


def _until(condition: Callable[[], bool], seconds: float = 15.0, step: float = 0.01) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(step)


def _read(db: Path, sql: str, *args: object) -> list[tuple[Any, ...]]:
    """A reader beside the server, as an operator's `sqlite3` would be."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        return conn.execute(sql, args).fetchall()


def _count(db: Path, scope_id: str) -> int:
    try:
        rows = _read(db, "SELECT count(*) FROM entry_versions WHERE scope_id = ?", scope_id)
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    return int(rows[0][0])


class Server:
    """The server logs every request: its log goes to a file, since a pipe nobody reads
    fills and stalls the server once the tests poll /v1/ready for a while."""

    def __init__(self, db: Path) -> None:
        port = free_port()
        log = db.with_suffix(".log")
        with log.open("a") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "powercontext.cli", "server", "run", "--port", str(port)],
                env=_env(db),
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )
        self.url = f"http://127.0.0.1:{port}"
        wait_until_healthy(self.process, self.url, log=log)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(15)


def _in_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _hits(client: httpx.Client, scope_id: str, query: str, mode: str) -> list[object]:
    response = client.post(
        "/v1/memory/search",
        json={"scope_id": scope_id, "query": query, "mode": mode, "limit": 15},
    )
    assert response.status_code == 200, response.text
    return [
        (hit["text"], hit["score"], [(e["channel"], e["rank"], e["score"]) for e in hit["explain"]])
        for hit in response.json()["hits"]
    ]


def test_a_stream_committed_before_the_kill_is_answered_by_its_keyed_retry(
    tmp_path: Path,
) -> None:
    db = tmp_path / "kill.db"
    texts = _texts()
    body = _stream_body(texts)
    params = {"scope_id": "s", "idempotency_key": "batch-1"}
    server = Server(db)
    seen: list[object] = []

    def send() -> None:
        try:
            seen.append(
                httpx.post(
                    f"{server.url}/v1/memory/remember/stream",
                    params=params,
                    content=body,
                    headers=NDJSON,
                    timeout=60,
                ).status_code
            )
        except httpx.TransportError as error:
            seen.append(type(error).__name__)

    try:
        sender = _in_thread(send)
        # The text commit is visible before the vectors are written and the answer sent.
        _until(lambda: _count(db, "s") == ENTRIES)
        server.kill()
        sender.join(30)
        assert seen and seen[0] != 200, seen  # the client never got its answer
        stored = _read(
            db,
            "SELECT entry_id, added_revision FROM entry_versions WHERE scope_id = 's' ORDER BY key",
        )
        assert {revision for _, revision in stored} == {1}

        server = Server(db)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            retry = client.post(
                "/v1/memory/remember/stream", params=params, content=body, headers=NDJSON
            )
            assert retry.status_code == 200, retry.text
            answer = retry.json()
            assert answer["memory_ref"]["revision"] == 1
            assert [e["entry_id"] for e in answer["entries"]] == [e for e, _ in stored]
            assert (
                client.post("/v1/memory/head", json={"scope_id": "s"}).json()["memory_ref"][
                    "revision"
                ]
                == 1
            )
            assert _count(db, "s") == ENTRIES

            def filled() -> bool:
                ready = client.get("/v1/ready")
                return ready.status_code == 200 and ready.json()["vectors_pending"] == 0

            _until(filled, 30, step=0.1)
            fresh = client.post(
                "/v1/memory/remember/stream",
                params={"scope_id": "fresh"},
                content=body,
                headers=NDJSON,
            )
            assert fresh.status_code == 200, fresh.text
            for query in ("alpha river", "deploy friday kernel", "note 17", "tiger"):
                for mode in ("fts", "vector", "hybrid", "auto"):
                    assert _hits(client, "s", query, mode) == _hits(client, "fresh", query, mode)
    finally:
        server.stop()


def _export(server: Server, texts: list[str]) -> list[str]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        wrote = client.post(
            "/v1/memory/remember/stream",
            params={"scope_id": "source"},
            content=_stream_body(texts),
            headers=NDJSON,
        )
        assert wrote.status_code == 200, wrote.text
        return client.get("/v1/memory/export", params={"scope_id": "source"}).text.splitlines()


def test_an_import_killed_after_a_batch_keeps_whole_batches_and_completes_on_rerun(
    tmp_path: Path,
) -> None:
    db = tmp_path / "import.db"
    server = Server(db)
    release = threading.Event()
    try:
        lines = _export(server, _texts())
        assert len(lines) == ENTRIES + 1

        def body() -> Iterator[bytes]:
            # One batch and a line of the next, then hold the connection until the kill.
            yield "".join(line + "\n" for line in lines[:1002]).encode()
            release.wait(30)
            yield b""

        def send() -> None:
            with contextlib.suppress(httpx.TransportError):  # the kill cuts it off
                httpx.post(
                    f"{server.url}/v1/memory/import",
                    params={"scope_id": "copy"},
                    content=body(),
                    headers=NDJSON,
                    timeout=60,
                )

        sender = _in_thread(send)
        _until(lambda: _count(db, "copy") >= 1000)
        server.kill()
        release.set()
        sender.join(30)
        per_revision = Counter(
            revision
            for (revision,) in _read(
                db, "SELECT added_revision FROM entry_versions WHERE scope_id = 'copy'"
            )
        )
        assert per_revision == {1: 1000}

        server = Server(db)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            rerun = client.post(
                "/v1/memory/import",
                params={"scope_id": "copy", "on_existing": "skip"},
                content="".join(line + "\n" for line in lines).encode(),
                headers=NDJSON,
            )
            assert rerun.status_code == 200, rerun.text
            assert (rerun.json()["added"], rerun.json()["skipped"]) == (ENTRIES - 1000, 1000)
            copied = client.get("/v1/memory/export", params={"scope_id": "copy"}).text
        entries = [json.loads(line) for line in copied.splitlines()[1:]]
        source = [json.loads(line) for line in lines[1:]]
        assert [(e["entry_id"], e["text"]) for e in entries] == [
            (e["entry_id"], e["text"]) for e in source
        ]
    finally:
        release.set()
        server.stop()
