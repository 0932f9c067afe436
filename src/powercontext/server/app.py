"""`create_app`: the FastAPI application of the HTTP v1 API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI

from powercontext import __version__
from powercontext.config import ServerSettings
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime, open_runtime
from powercontext.server.auth import ApiKeyAuthority
from powercontext.server.capability import announced_capability
from powercontext.server.contract import DESCRIPTION, TITLE, generate_openapi, load_contract
from powercontext.server.direct import DirectJsonCalls
from powercontext.server.docs_page import docs_router
from powercontext.server.errors import install_error_handlers
from powercontext.server.gate import RequestGate
from powercontext.server.mcp import McpRoute, McpTools
from powercontext.server.metrics import ServerMetrics
from powercontext.server.middleware import RequestContextMiddleware
from powercontext.server.operations import OPERATIONS
from powercontext.server.readiness import ReadinessProbe
from powercontext.server.routes import router
from powercontext.server.state import ServerState
from powercontext.server.ui import install_ui

STREAMING_PATHS = frozenset(
    op.http.path for op in OPERATIONS if op.http and op.http.raw and op.http.method == "POST"
)
"""Raw POST routes read their body as a stream and bound it themselves (e.g. per line)."""

RuntimeFactory = Callable[[ServerSettings, SearchObserver], AbstractAsyncContextManager[Runtime]]
"""Opens the runtime the app serves; tests inject models with it."""


def default_runtime_factory(
    settings: ServerSettings, observer: SearchObserver
) -> AbstractAsyncContextManager[Runtime]:
    return open_runtime(settings, search_observer=observer)


class PowerContextApp(FastAPI):
    """Serves the committed contract at /openapi.json (falling back to the generated one)."""

    def generated_openapi(self) -> dict[str, Any]:
        return generate_openapi(self)

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            self.openapi_schema = load_contract() or self.generated_openapi()
        return self.openapi_schema


def create_app(
    settings: ServerSettings | None = None,
    *,
    runtime_factory: RuntimeFactory | None = None,
) -> PowerContextApp:
    """The app for `settings` (default: the environment). The runtime opens in the lifespan.

    Auth configuration errors raise ConfigurationError here, before anything is served.
    """
    settings = settings if settings is not None else ServerSettings()
    factory = runtime_factory or default_runtime_factory
    state = ServerState(
        authority=ApiKeyAuthority.from_config(settings.http), metrics=ServerMetrics()
    )
    mcp_tools = McpTools(state, settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with factory(settings, state.metrics.observe_search) as runtime, mcp_tools.running():
            state.runtime = runtime
            state.readiness = probe = ReadinessProbe(runtime)
            state.metrics.track_vectors_pending(probe.vectors_pending)
            try:
                async with announced_capability(runtime):
                    yield
            finally:
                state.runtime = None
                state.readiness = None

    app = PowerContextApp(
        title=TITLE,
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        openapi_url="/openapi.json",
        docs_url=None,  # docs_page serves /docs from local assets, not a CDN
        redoc_url=None,
        separate_input_output_schemas=False,
    )
    app.state.powercontext = state
    # The v1 routes join the app's own router: an included router (FastAPI >= 0.16x) is a
    # lazy wrapper that matches every request twice through it, about a tenth of the
    # server's CPU per search request. Same routes, same order, same OpenAPI.
    app.router.routes.extend(router.routes)
    app.include_router(docs_router)
    # Not part of the v1 contract (openapi/powercontext.yaml): MCP has its own tool schemas.
    app.router.routes.append(McpRoute(mcp_tools))
    install_ui(app, settings)  # /ui, off unless POWERCONTEXT_SERVER_UI_ENABLED=true
    install_error_handlers(app)
    app.add_middleware(DirectJsonCalls, fastapi_app=app, operations=OPERATIONS)
    app.add_middleware(
        RequestContextMiddleware,
        metrics=state.metrics,
        max_body_bytes=settings.http.max_body_bytes,
        max_write_body_bytes=settings.http.max_write_body_bytes,
        body_read_timeout_seconds=settings.http.body_read_timeout_seconds,
        gate=RequestGate(state.authority, bind_host=settings.http.host),
        streaming_paths=STREAMING_PATHS,
        routes=app.router.routes,  # the same list: routes added later are matched too
    )
    return app
