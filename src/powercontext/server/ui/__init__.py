"""The memory inspector page (/ui), served only when POWERCONTEXT_SERVER_UI_ENABLED=true."""

from __future__ import annotations

from fastapi import FastAPI

from powercontext.config import ServerSettings
from powercontext.memory.errors import NotFoundError
from powercontext.server.ui.routes import UI_PATH, ui_router

__all__ = ["UI_PATH", "install_ui", "ui_router"]


DISABLED_HINT = (
    "the memory inspector is disabled: start the server with "
    "POWERCONTEXT_SERVER_UI_ENABLED=true to serve it at /ui"
)


async def _disabled() -> None:
    raise NotFoundError(DISABLED_HINT)


def install_ui(app: FastAPI, settings: ServerSettings) -> None:
    """Add the inspector routes when enabled. Otherwise nothing under /ui exists (404), and
    the page's own address answers its 404 with how to turn the inspector on."""
    if settings.ui.enabled:
        app.include_router(ui_router)
    else:
        app.add_api_route(UI_PATH, _disabled, methods=["GET"], include_in_schema=False)
