"""`powercontext server run --workers 2` as an operator runs it, on SQLite and PostgreSQL.

One idempotency key sent to both workers at once makes one write; the health, readiness and
metrics endpoints answer for the whole server whichever worker serves them; SIGTERM lets an
in-flight write finish and the command exits 0; every log line is one JSON object; and the
failures an operator meets at start (the port taken, a worker that cannot open the database)
end the command with one error line and a non-zero exit, never exit 0.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import pg_server
from tests.http.processes import free_port, start_server, wait_until_healthy

CONCURRENT = 8
RUN = (sys.executable, "-m", "powercontext.cli", "server", "run")


def _env(database_url: str) -> dict[str, str]:
    return os.environ | {
        "POWERCONTEXT_SERVER_DATABASE_URL": database_url,
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
        "POWERCONTEXT_SERVER_LOG_FORMAT": "json",
    }


def _concurrently(call: object, count: int = CONCURRENT) -> list[httpx.Response]:
    """`count` calls released together, each on its own connection (so on either worker)."""
    assert callable(call)
    barrier = threading.Barrier(count)

    def one(_: int) -> httpx.Response:
        barrier.wait()
        response: httpx.Response = call()
        return response

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def _requests_counted(text: str, route: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "powercontext_http_requests_total" and sample.labels == {
                "route": route,
                "method": "POST",
                "status": "200",
            }:
                total += sample.value
    return total


def _operate(database_url: str) -> None:
    process, base = start_server(_env(database_url), "--workers", "2")
    failure: AssertionError | None = None
    try:
        wait_until_healthy(process, base, seconds=60)
        health = httpx.get(f"{base}/v1/health", timeout=10)
        assert health.status_code == 200 and health.json()["status"] == "ok"
        for _ in range(4):
            ready = httpx.get(f"{base}/v1/ready", timeout=10)
            assert ready.status_code == 200, ready.text
            assert ready.json()["status"] == "ready"
            assert ready.json()["checks"]["database"]["ok"] is True

        body = {"scope_id": "ops", "text": "written once", "idempotency_key": "op-1"}
        answers = _concurrently(
            lambda: httpx.post(f"{base}/v1/memory/remember", json=body, timeout=60)
        )
        assert {a.status_code for a in answers} == {200}, [a.text[:200] for a in answers]
        # A replay reports the live vector count, which the first write may still be filling.
        replies = [{k: v for k, v in a.json().items() if k != "vectors_pending"} for a in answers]
        assert len({json.dumps(reply, sort_keys=True) for reply in replies}) == 1
        head = httpx.post(f"{base}/v1/memory/head", json={"scope_id": "ops"}, timeout=10)
        assert head.json()["memory_ref"]["revision"] == 1

        writes = _concurrently(
            lambda: httpx.post(
                f"{base}/v1/memory/remember",
                json={"scope_id": "count", "text": "counted write"},
                timeout=60,
            )
        )
        assert {w.status_code for w in writes} == {200}
        # Whichever worker serves the scrape, it reports every worker's requests.
        for _ in range(4):
            scraped = httpx.get(f"{base}/metrics", timeout=10)
            assert scraped.status_code == 200
            assert _requests_counted(scraped.text, "/v1/memory/remember") == 2 * CONCURRENT
            pending = [
                s
                for f in text_string_to_metric_families(scraped.text)
                for s in f.samples
                if s.name == "powercontext_memory_vectors_pending"
            ]
            assert [s.value for s in pending] == [0.0]

        big = {"scope_id": "big", "entries": [{"text": f"entry {i} " * 20} for i in range(800)]}
        answered: list[int] = []
        writer = threading.Thread(
            target=lambda: answered.append(
                httpx.post(f"{base}/v1/memory/remember", json=big, timeout=60).status_code
            )
        )
        writer.start()
        time.sleep(0.3)
    except AssertionError as exc:
        failure = exc
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    if failure is not None:
        raise AssertionError(f"{failure}\nserver log:\n{stderr[-6000:]}") from failure
    writer.join()
    assert answered == [200]
    assert process.returncode == 0, stderr[-2000:]
    lines = stderr.splitlines()
    assert lines and all(json.loads(line)["message"] is not None for line in lines)
    access = [json.loads(line) for line in lines if '"powercontext.http.access"' in line]
    assert access and all(
        {"request_id", "route", "status", "latency_ms"} <= set(record) for record in access
    )


def test_two_workers_on_sqlite_operate_as_one_server(tmp_path: Path) -> None:
    _operate(f"sqlite:///{tmp_path / 'ops.db'}")


@pytest.mark.postgres
async def test_two_workers_on_postgres_operate_as_one_server(tmp_path: Path) -> None:
    _operate(await pg_server.database_url(tmp_path))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_is_one_error_line(tmp_path: Path, workers: str) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [*RUN, "--port", str(port), "--workers", workers],
            env=_env(f"sqlite:///{tmp_path / 'taken.db'}"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode not in (0, -signal.SIGTERM)
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "already in use" in done.stderr and "--port" in done.stderr
    assert not (tmp_path / "taken.db").exists()  # refused before opening the database


def test_a_worker_that_cannot_start_fails_the_command(tmp_path: Path) -> None:
    """The database is gone between the parent's check and the workers' start: the command
    must not exit 0 (a supervisor restarts only a failure) and ends with the cause in one
    line."""
    home = tmp_path / "db"
    port = free_port()
    process = subprocess.Popen(
        [*RUN, "--port", str(port), "--workers", "2"],
        env=_env(f"sqlite:///{home / 'x.db'}"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    seen = []
    try:
        for line in process.stderr:
            seen.append(line)
            if "Started parent process" in line:
                # A worker needs over a second to import before it opens the database.
                shutil.rmtree(home)
                home.write_text("not a directory")
                break
        rest = process.communicate(timeout=60)[1]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode not in (0, None), "".join(seen) + rest
    last = rest.strip().splitlines()[-1]
    assert last.startswith("error storage_unavailable:"), rest[-2000:]
    assert str(home) in last
