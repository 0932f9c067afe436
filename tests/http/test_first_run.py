"""What a new user meets when `powercontext server run` starts: which embedder is active (and,
without one, how to get hybrid search), and a startup error as one line, not a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.http.processes import free_port, wait_until_healthy


def _env(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "OPENAI_"))}
    return env | {
        "POWERCONTEXT_HOME": str(tmp_path / "home"),
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 'first.db'}",
        **settings,
    }


def _server(port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "powercontext.cli", "server", "run", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_server_without_embedder_says_so_at_startup_and_in_the_422(tmp_path: Path) -> None:
    port = free_port()
    process = _server(port, _env(tmp_path, POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL="none"))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(process, url)
        with httpx.Client(base_url=url) as client:
            client.post("/v1/memory/remember", json={"scope_id": "p", "text": "some text"})
            refused = client.post(
                "/v1/memory/search", json={"scope_id": "p", "query": "text", "mode": "hybrid"}
            )
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert refused.status_code == 422
    message = refused.json()["error"]["message"]
    assert "pip install 'powercontext-memory[local]'" in message
    assert "or in a clone pip install -e '.[local]'" in message  # what the README installs
    assert "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL" in message
    startup = [line for line in stderr.splitlines() if "powercontext.startup" in line]
    assert len(startup) == 1, stderr
    assert "search is full text only" in startup[0]
    assert "pip install 'powercontext-memory[local]'" in startup[0]


def test_a_hash_embedder_is_named_at_startup(tmp_path: Path) -> None:
    port = free_port()
    env = _env(tmp_path, POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL="hash:64")
    process = _server(port, env)
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}")
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    startup = [line for line in stderr.splitlines() if "powercontext.startup" in line]
    assert len(startup) == 1, stderr
    assert "embedding model hash" in startup[0] and "64 dimensions" in startup[0]
    assert "hybrid search" in startup[0]


def test_a_missing_provider_key_stops_the_server_with_one_line(tmp_path: Path) -> None:
    env = _env(
        tmp_path, POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL="openai:text-embedding-3-small"
    )
    done = subprocess.run(
        [sys.executable, "-m", "powercontext.cli", "server", "run", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "configuration_error" in lines[0] and "OPENAI_API_KEY" in lines[0]
