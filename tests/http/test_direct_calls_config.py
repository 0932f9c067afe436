"""server.direct under app configurations the router honours and the direct way must too:
exception handlers by status code or written sync, a dependency or a body limit of a route's
own, and middleware of the router. Each either answers as the router does, or turns the
direct way off for the routes it touches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import Depends, FastAPI, HTTPException
from fastapi.routing import APIRouter
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from powercontext.memory.errors import PowerContextError
from powercontext.server import create_app, direct
from powercontext.server.operations import OPERATIONS, Operation
from powercontext.server.routes import register_operations
from tests.http.conftest import Served, _settings
from tests.http.live import live_server
from tests.http.test_direct_calls_differential import JSON_POSTS
from tests.http.test_direct_calls_support import Switch, answer


def _sync_domain_handler(request: Request, exc: Exception) -> Response:
    return JSONResponse({"handled_by": "sync", "error": type(exc).__name__}, status_code=404)


async def _teapot_handler(request: Request, exc: Exception) -> Response:
    return JSONResponse({"handled_by": "status 418"}, status_code=418)


@pytest.fixture(scope="module")
def handled_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """No auth; a sync handler for the domain errors and a handler for status 418."""
    db = tmp_path_factory.mktemp("direct-handlers") / "handlers.db"
    app = create_app(_settings(db, "none"))
    app.add_exception_handler(PowerContextError, _sync_domain_handler)
    app.add_exception_handler(418, _teapot_handler)
    with live_server(app) as server:
        yield Served(url=server.url, db_path=db)


def test_a_sync_exception_handler_answers_a_direct_call(
    handled_server: Served, monkeypatch: pytest.MonkeyPatch, fresh_scope: str
) -> None:
    switch = Switch(monkeypatch)
    body = {"scope_id": fresh_scope, "entry_id": "no-such-entry"}
    with handled_server.client() as client:
        on, off, went_direct = switch.both(
            lambda: answer(client.post("/v1/memory/entries/by-id", json=body))
        )
    assert went_direct
    assert off[0] == 404 and off[2] == {"handled_by": "sync", "error": "NotFoundError"}
    assert on == off


def test_a_status_code_handler_answers_a_direct_call(
    handled_server: Served, monkeypatch: pytest.MonkeyPatch, fresh_scope: str
) -> None:
    async def refused(self: Operation, call: Any, body: Any) -> Any:
        raise StarletteHTTPException(418, "no tea here")

    monkeypatch.setattr(Operation, "perform", refused)
    switch = Switch(monkeypatch)
    with handled_server.client() as client:
        on, off, went_direct = switch.both(
            lambda: answer(client.post("/v1/memory/head", json={"scope_id": fresh_scope}))
        )
    assert went_direct
    assert off[0] == 418 and off[2] == {"handled_by": "status 418"}
    assert on == off


async def _rate_limited() -> None:
    raise HTTPException(429, "slow down")


def _app_of(router: APIRouter) -> FastAPI:
    app = FastAPI()
    app.router.routes.extend(router.routes)
    return app


def test_a_route_with_a_dependency_of_its_own_is_not_taken_directly() -> None:
    router = APIRouter(dependencies=[Depends(_rate_limited)])
    register_operations(router, OPERATIONS)
    assert direct.direct_targets(_app_of(router), OPERATIONS) == {}
    plain = APIRouter()
    register_operations(plain, OPERATIONS)
    assert set(direct.direct_targets(_app_of(plain), OPERATIONS)) == set(JSON_POSTS)


def test_a_route_with_a_body_limit_of_its_own_is_not_taken_directly() -> None:
    router = APIRouter()
    register_operations(router, OPERATIONS)
    app = _app_of(router)
    limited = next(r for r in router.routes if getattr(r, "path", "") == "/v1/memory/head")
    app.router.routes.remove(limited)
    app.router.add_api_route(
        "/v1/memory/head",
        limited.endpoint,  # type: ignore[attr-defined]
        methods=["POST"],
        name=limited.name,  # type: ignore[attr-defined]
        max_body_size=64,
    )
    targets = direct.direct_targets(app, OPERATIONS)
    assert "/v1/memory/head" not in targets
    assert set(targets) == set(JSON_POSTS) - {"/v1/memory/head"}


def test_a_router_with_a_body_limit_is_not_skipped() -> None:
    router = APIRouter()
    register_operations(router, OPERATIONS)
    app = FastAPI()
    # The limit is the router's own middleware, run before any of its routes.
    app.router = APIRouter(routes=list(router.routes), max_body_size=64)
    assert direct.direct_targets(app, OPERATIONS) == {}


class _Marking:
    """A middleware added inside the direct layer: every answer must pass through it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def marked(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], (b"x-inner", b"yes")]}
            await send(message)

        await self.app(scope, receive, marked)


def test_a_middleware_inside_the_direct_layer_is_not_skipped(
    tmp_path: Any, fresh_scope: str
) -> None:
    app = create_app(_settings(tmp_path / "inner.db", "none"))
    app.user_middleware.append(Middleware(_Marking))  # innermost: after DirectJsonCalls
    with live_server(app) as server:
        served = Served(url=server.url, db_path=tmp_path / "inner.db")
        with served.client() as client:
            head = client.post("/v1/memory/head", json={"scope_id": fresh_scope})
    assert head.status_code == 200
    assert head.headers.get("x-inner") == "yes"
