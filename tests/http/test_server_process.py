"""`powercontext server run` as a real process: serves, logs JSON access lines, stops on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import httpx

from tests.http.processes import start_server, wait_until_healthy


def test_server_run_serves_logs_and_shuts_down_gracefully(tmp_path: Path) -> None:
    env = os.environ | {
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 'proc.db'}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "none",
        "POWERCONTEXT_SERVER_LOG_FORMAT": "json",
    }
    process, url = start_server(env)
    try:
        wait_until_healthy(process, url)
        with httpx.Client(base_url=url) as client:
            client.post("/v1/memory/remember", json={"scope_id": "p", "text": "private words"})
            found = client.post(
                "/v1/memory/search",
                json={"scope_id": "p", "query": "private"},
                headers={"X-Request-ID": "proc-test-1"},
            )
            assert len(found.json()["hits"]) == 1
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    # A graceful stop is a clean exit (uvicorn's re-raised SIGTERM is swallowed: runner.py).
    assert process.returncode == 0, stderr
    assert "Application shutdown complete" in stderr
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    access = [line for line in lines if line["logger"] == "powercontext.http.access"]
    search = next(line for line in access if line.get("request_id") == "proc-test-1")
    assert search["route"] == "/v1/memory/search" and search["status"] == 200
    assert search["latency_ms"] >= 0
    assert "private" not in stderr
