"""`serve`: run the app with uvicorn, refusing an unsafe public bind.

The runtime (configuration, models, database) is opened before uvicorn starts, in the same
event loop, so a startup error (a missing extra, a missing provider key, an unreachable
database) reaches the command line as the exception itself: one line, not the traceback
uvicorn prints for a failed lifespan.

With `workers` > 1, uvicorn's supervisor binds the socket and starts that many processes, each
with its own app and runtime on the same database (a file or PostgreSQL: writes from several
processes are serialized by the store and retried on a lost race). The parent opens the
runtime once first, so configuration errors still come out as one line and schema
migrations run once before the workers start.

uvicorn parses HTTP with httptools and runs on uvloop when they are importable (core
dependencies, prebuilt wheels; both are C): about a tenth of the server's CPU per search
request against h11 and asyncio's pure-Python loop. Without them it falls back to h11 and
asyncio, with the same behaviour.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import uvicorn

from powercontext.config import ServerSettings
from powercontext.memory.errors import ConfigurationError
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime, open_runtime
from powercontext.server.app import PowerContextApp, create_app
from powercontext.server.auth import ApiKeyAuthority, check_bind_safety
from powercontext.server.logs import configure_logging

GRACEFUL_SHUTDOWN_SECONDS = 10


def serve(settings: ServerSettings | None = None, *, workers: int = 1) -> None:
    """Serve until SIGINT/SIGTERM; in-flight requests get GRACEFUL_SHUTDOWN_SECONDS to finish,
    then the runtime (and the database) is closed."""
    settings = settings if settings is not None else ServerSettings()
    check_bind_safety(settings.http, ApiKeyAuthority.from_config(settings.http))
    configure_logging(settings.log_format)
    if workers > 1:
        _serve_workers(settings, workers)
    else:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(_serve(settings))


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed, else None (asyncio's own)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _http_implementation() -> str:
    """httptools (C) when it is installed, else h11 (pure Python)."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


def worker_app() -> PowerContextApp:
    """The app of one worker process (uvicorn's factory): settings from the environment."""
    settings = ServerSettings()
    configure_logging(settings.log_format)
    return create_app(settings)


def _serve_workers(settings: ServerSettings, workers: int) -> None:
    if (settings.database.url or "").endswith(":memory:"):
        raise ConfigurationError(
            "--workers needs a database the processes can share: an in-memory SQLite database "
            "belongs to one process (set POWERCONTEXT_SERVER_DATABASE_URL to a file or "
            "postgresql://...)"
        )
    asyncio.run(_check_opens(settings))
    # Workers read their settings from the environment: carry the command line's bind there.
    os.environ["POWERCONTEXT_SERVER_HTTP_HOST"] = settings.http.host
    os.environ["POWERCONTEXT_SERVER_HTTP_PORT"] = str(settings.http.port)
    uvicorn.run(
        "powercontext.server.runner:worker_app",
        factory=True,
        workers=workers,
        **_uvicorn_options(settings),
    )


def _uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """What every way of serving passes uvicorn: our own logging, no server header, the
    fastest HTTP parser and event loop installed."""
    return {
        "http": _http_implementation(),
        "loop": "asyncio" if _loop_factory() is None else "uvloop",
        "host": settings.http.host,
        "port": settings.http.port,
        "log_config": None,
        "access_log": False,
        "lifespan": "on",
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
        "server_header": False,
    }


class _Server(uvicorn.Server):
    """uvicorn's server, minus re-raising the stop signal once it shut down cleanly.

    uvicorn kills its own process with the captured SIGTERM/SIGINT after a graceful shutdown,
    so `server run` would end by signal (143 in a shell, a failure to a supervisor that checks
    the code) before the runtime is closed. A clean stop exits 0 once the database is closed;
    a shutdown that raises still re-raises the signal."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            # uvicorn's own list (0.29+); absent in a later version, the signal is re-raised.
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list):
                captured.clear()


async def _check_opens(settings: ServerSettings) -> None:
    async with open_runtime(settings):
        pass


async def _serve(settings: ServerSettings) -> None:
    opened: list[Runtime] = []

    @asynccontextmanager
    async def already_open(_: ServerSettings, __: SearchObserver) -> AsyncIterator[Runtime]:
        yield opened[0]

    app = create_app(settings, runtime_factory=already_open)
    observer = app.state.powercontext.metrics.observe_search
    async with open_runtime(settings, search_observer=observer) as runtime:
        opened.append(runtime)
        config = uvicorn.Config(app, **_uvicorn_options(settings))
        await _Server(config).serve()
