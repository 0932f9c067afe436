"""A real uvicorn server on a loopback ephemeral port, in a background thread."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn

from powercontext.config import DatabaseConfig, InferenceConfig, ServerSettings
from powercontext.memory.errors import (
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
)
from powercontext.memory.models import MemoryHit, MemoryRerankDecision
from powercontext.memory.ports import MemoryReranker
from powercontext.runtime import open_runtime
from powercontext.server import PowerContextApp, create_app
from powercontext.server.app import RuntimeFactory
from tests import pg_server


def with_reranker(reranker: MemoryReranker) -> RuntimeFactory:
    """A runtime factory for create_app that injects `reranker` into every runtime it opens."""
    return lambda settings, observer: open_runtime(
        settings, memory_reranker=reranker, search_observer=observer
    )


# Text an error must never leak: injected into the failures raised below.
SECRET = "provider-body-SELECT-secret-7f3a"


@dataclass
class ScriptedReranker:
    """A real MemoryReranker whose behaviour the query selects.

    `raise-timeout`, `raise-unavailable`, `raise-invalid` and `raise-crash` raise; `flaky-<id>`
    fails with InferenceUnavailableError on the first `flaky_failures` calls for that id; any
    other query reverses the coarse pool (so a test can tell reranked output apart).
    """

    policy_id: str = "tests.scripted.v1"
    flaky_failures: int = 2
    calls: int = 0
    _flaky: dict[str, int] = field(default_factory=dict)

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        self.calls += 1
        if "raise-timeout" in query:
            raise InferenceTimeoutError(f"timed out; {SECRET}")
        if "raise-unavailable" in query:
            raise InferenceUnavailableError(f"HTTP 500: {SECRET}")
        if "raise-invalid" in query:
            raise InvalidInferenceOutputError(f"garbage output {SECRET}")
        if "raise-crash" in query:
            raise RuntimeError(f"unexpected {SECRET}")
        flaky = re.search(r"flaky-(\w+)", query)
        if flaky:
            seen = self._flaky.get(flaky.group(1), 0)
            self._flaky[flaky.group(1)] = seen + 1
            if seen < self.flaky_failures:
                raise InferenceUnavailableError(f"flaky {SECRET}")
        return MemoryRerankDecision(selected_ranks=tuple(range(len(candidates), 0, -1)))

    def flaky_attempts(self, token: str) -> int:
        return self._flaky.get(token, 0)


@dataclass
class LiveServer:
    app: PowerContextApp
    url: str


@contextmanager
def live_server(app: PowerContextApp, *, startup_timeout: float = 20.0) -> Iterator[LiveServer]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=5
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield LiveServer(app=app, url=f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


@contextmanager
def backend_server(backend: str, workdir: Path) -> Iterator[LiveServer]:
    """A keyless live server without models on a fresh SQLite file or PostgreSQL schema."""
    if backend == "sqlite":
        database = f"sqlite:///{workdir / 'memory.db'}"
    else:
        database = asyncio.run(pg_server.database_url(workdir))
    settings = ServerSettings(
        database=DatabaseConfig(url=database), inference=InferenceConfig(embedding_model="none")
    )
    with live_server(create_app(settings)) as server:
        yield server
