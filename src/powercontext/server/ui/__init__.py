"""The memory inspector page (/ui), served only when POWERCONTEXT_SERVER_UI_ENABLED=true."""

from __future__ import annotations

from fastapi import FastAPI

from powercontext.config import ServerSettings
from powercontext.server.ui.routes import UI_PATH, ui_router

__all__ = ["UI_PATH", "install_ui", "ui_router"]


def install_ui(app: FastAPI, settings: ServerSettings) -> None:
    """Add the inspector routes when enabled; otherwise /ui does not exist (404)."""
    if settings.ui.enabled:
        app.include_router(ui_router)
