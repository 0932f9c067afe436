"""`powercontext server run` as a real child process: a free port, and waiting until it serves."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until_healthy(
    process: subprocess.Popen[Any], url: str, seconds: float = 30, *, log: Path | None = None
) -> None:
    """Poll /v1/health; fail with the server's stderr (piped, or the `log` file it goes to)
    if it exits first."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if log is not None:
            assert process.poll() is None, log.read_text()
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.1)


def start_server(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], str]:
    """`powercontext server run` on a free port with this environment (stderr piped, as text);
    returns the process and its base URL. The caller waits for health and stops it.

    Nothing reads the pipe meanwhile, and the server logs every request to it: a test that
    sends more than a few hundred requests must read it as it goes (or start the server with
    its log going to a file), or the full pipe blocks the server."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "powercontext.cli", "server", "run", "--port", str(port), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, f"http://127.0.0.1:{port}"
