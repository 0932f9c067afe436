"""`serve`: run the app with uvicorn, refusing an unsafe public bind."""

from __future__ import annotations

import uvicorn

from powercontext.config import ServerSettings
from powercontext.server.app import create_app
from powercontext.server.auth import ApiKeyAuthority, check_bind_safety
from powercontext.server.logs import configure_logging

GRACEFUL_SHUTDOWN_SECONDS = 10


def serve(settings: ServerSettings | None = None) -> None:
    """Serve until SIGINT/SIGTERM; in-flight requests get GRACEFUL_SHUTDOWN_SECONDS to finish,
    then the lifespan closes the runtime (and the database)."""
    settings = settings if settings is not None else ServerSettings()
    check_bind_safety(settings.http, ApiKeyAuthority.from_config(settings.http))
    configure_logging(settings.log_format)
    config = uvicorn.Config(
        create_app(settings),
        host=settings.http.host,
        port=settings.http.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        server_header=False,
    )
    uvicorn.Server(config).run()
