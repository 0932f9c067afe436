"""`serve`: run the app with uvicorn, refusing an unsafe public bind.

The runtime (configuration, models, database) is opened before uvicorn starts, in the same
event loop, so a startup error (a missing extra, a missing provider key, an unreachable
database) reaches the command line as the exception itself: one line, not the traceback
uvicorn prints for a failed lifespan.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn

from powercontext.config import ServerSettings
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime, open_runtime
from powercontext.server.app import create_app
from powercontext.server.auth import ApiKeyAuthority, check_bind_safety
from powercontext.server.logs import configure_logging

GRACEFUL_SHUTDOWN_SECONDS = 10


def serve(settings: ServerSettings | None = None) -> None:
    """Serve until SIGINT/SIGTERM; in-flight requests get GRACEFUL_SHUTDOWN_SECONDS to finish,
    then the runtime (and the database) is closed."""
    settings = settings if settings is not None else ServerSettings()
    check_bind_safety(settings.http, ApiKeyAuthority.from_config(settings.http))
    configure_logging(settings.log_format)
    asyncio.run(_serve(settings))


async def _serve(settings: ServerSettings) -> None:
    opened: list[Runtime] = []

    @asynccontextmanager
    async def already_open(_: ServerSettings, __: SearchObserver) -> AsyncIterator[Runtime]:
        yield opened[0]

    app = create_app(settings, runtime_factory=already_open)
    observer = app.state.powercontext.metrics.observe_search
    async with open_runtime(settings, search_observer=observer) as runtime:
        opened.append(runtime)
        config = uvicorn.Config(
            app,
            host=settings.http.host,
            port=settings.http.port,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
            server_header=False,
        )
        await uvicorn.Server(config).serve()
