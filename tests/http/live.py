"""A real uvicorn server on a loopback ephemeral port, in a background thread."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from powercontext.config import DatabaseConfig, InferenceConfig, ServerSettings
from powercontext.memory.ports import MemoryReranker
from powercontext.runtime import open_runtime
from powercontext.server import PowerContextApp, create_app
from powercontext.server.app import RuntimeFactory
from powercontext.testing import QueryScriptedReranker
from tests import pg_server


def with_reranker(reranker: MemoryReranker) -> RuntimeFactory:
    """A runtime factory for create_app that injects `reranker` into every runtime it opens."""
    return lambda settings, observer: open_runtime(
        settings, memory_reranker=reranker, search_observer=observer
    )


# Text an error must never leak: injected into the failures raised below.
SECRET = "provider-body-SELECT-secret-7f3a"


def scripted_reranker() -> QueryScriptedReranker:
    """The reranker of the test servers: the query picks its behaviour; errors quote SECRET."""
    return QueryScriptedReranker(secret=SECRET, policy_id="tests.scripted.v1")


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
