"""The memory inspector: the page at /ui and the JSON routes it calls under /ui/api.

The page and its static files hold no data and are served without a key. The /ui/api routes
are registered from `OPERATIONS` (each row's `inspector` route and view, see
server/inspector_views.py): every one authenticates the bearer key and checks the scope
exactly like HTTP v1. Nothing here is part of the v1 contract: every route is left out of
the OpenAPI schema.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from powercontext.memory.errors import NotFoundError
from powercontext.server.calls import Call, declare_endpoint
from powercontext.server.html_page import html_page
from powercontext.server.operations import OPERATIONS, InspectorRoute, Operation
from powercontext.server.state import state_of

UI_PATH = "/ui"
API_PATH = UI_PATH + "/api"
_STATIC = UI_PATH + "/static"
STATIC_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}

# The page loads only its own script and stylesheet; even a missed escape could not run code.
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    # frame-ancestors covers current browsers; X-Frame-Options the ones that ignore it.
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _asset(name: str) -> bytes:
    return files("powercontext.server.ui").joinpath("static", name).read_bytes()


def _json(payload: Any) -> Response:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})


ui_router = APIRouter(include_in_schema=False)


_HEAD = f"""
<link rel="icon" href="{_STATIC}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{_STATIC}/style.css">
<script src="{_STATIC}/app.js" defer></script>
"""


@ui_router.get(UI_PATH)
async def inspector_page() -> Response:
    page = html_page("PowerContext inspector", head=_HEAD, body=_asset("body.html").decode())
    return Response(page, media_type="text/html; charset=utf-8", headers=_SECURITY_HEADERS)


@ui_router.get(_STATIC + "/{name}")
async def inspector_asset(name: str) -> Response:
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        raise NotFoundError("no such inspector file")
    return Response(_asset(name), media_type=media_type, headers=_SECURITY_HEADERS)


def _endpoint(operation: Operation, route: InspectorRoute) -> Any:
    async def endpoint(request: Request, grant: Any, body: Any = None) -> Response:
        if body is None:  # a GET: the request model takes no arguments
            body = operation.request()
        call = Call(grant, state_of(request))
        operation.admit(call, body)
        return _json(await route.view(call, body))

    body = operation.request if route.method == "POST" else None
    return declare_endpoint(endpoint, "inspector_" + operation.name, body)


for _operation in OPERATIONS:
    if _operation.inspector is not None:
        _route = _operation.inspector
        ui_router.add_api_route(
            API_PATH + _route.path, _endpoint(_operation, _route), methods=[_route.method]
        )
