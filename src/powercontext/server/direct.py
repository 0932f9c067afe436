"""`DirectJsonCalls`: a well-formed JSON call of an operation goes straight to its endpoint.

Between our request middleware and an endpoint, Starlette and FastAPI add four layers per
request (the exception middleware, FastAPI's exit-stack middleware, the router's matching of
every route in turn, the route's request/response wrapper) that a JSON POST of an operation
does not use: it has no path parameters, no dependency with cleanup, no background task.
Together they were about a sixth of the server's CPU per search request outside the search.

This layer sits just inside the request middleware. A call takes the direct way only when it
is exactly what the route would accept without objection: a POST to the path of an operation
whose body is JSON, `Content-Type: application/json`, a key the authority accepts and a body
that validates. Its endpoint's errors go to the app's own exception handlers, so the answer
is the one the router would give. Anything else (a refusal, an invalid body, a test's
dependency overrides, another method or path) is handed to the app unchanged, with the body
replayed, and FastAPI answers it as before (401 before 422 included). A route that would run
more than that (a dependency or a body limit of its own, the router's middleware) or a layer
added between this one and the exception middleware turns the direct way off.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.routing import APIRoute
from fastapi.telemetry import get_telemetry_data
from pydantic import TypeAdapter
from starlette._exception_handler import (
    ExceptionHandlers,
    StatusHandlers,
    wrap_app_handling_exceptions,
)
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from powercontext.server.calls import bearer, caller
from powercontext.server.middleware import replay_body
from powercontext.server.operations import Operation


class _Target:
    """One operation's route, and the adapter that validates its body."""

    __slots__ = ("body_type", "route")

    def __init__(self, route: APIRoute, operation: Operation) -> None:
        self.route = route
        self.body_type: TypeAdapter[Any] = TypeAdapter(operation.request)


def direct_targets(app: FastAPI, operations: Sequence[Operation]) -> dict[str, _Target]:
    """Path -> target of each JSON-body POST operation whose path the router would give to
    that operation's route first (the router tries its routes in order)."""
    targets: dict[str, _Target] = {}
    if app.router.middleware_stack != app.router.app:  # the router's own middleware (a limit)
        return targets
    for operation in operations:
        http = operation.http
        if http is None or http.method != "POST" or http.raw is not None:
            continue
        probe: Scope = {"type": "http", "method": "POST", "path": http.path, "root_path": ""}
        for route in app.router.routes:
            match, _ = route.matches(probe)
            if match is Match.NONE:
                continue
            if (
                match is Match.FULL
                and isinstance(route, APIRoute)
                and route.name == operation.operation_id
                and _nothing_but_the_endpoint(route)
            ):
                targets[http.path] = _Target(route, operation)
            break  # the first route that matches decides, as in the router
    return targets


def _nothing_but_the_endpoint(route: APIRoute) -> bool:
    """The route runs its endpoint, the caller's key check and the body's validation only:
    no dependency of its own (a router's `dependencies=` lands here too), no body limit."""
    callers = [dependency.call for dependency in route.dependant.dependencies]
    return callers == [caller] and getattr(route, "max_body_size", None) is None


class DirectJsonCalls:
    def __init__(
        self, app: ASGIApp, *, fastapi_app: FastAPI, operations: Sequence[Operation]
    ) -> None:
        self.app = app
        self.fastapi_app = fastapi_app
        self.operations = operations
        self._targets: dict[str, _Target] | None = None

    def _target(self, scope: Scope) -> _Target | None:
        if (
            not isinstance(self.app, ExceptionMiddleware)  # the layer it skips must be next
            or scope["type"] != "http"
            or scope.get("method") != "POST"
            or scope.get("root_path")
            or self.fastapi_app.dependency_overrides
        ):
            return None
        if self._targets is None:  # the routes are all added before the first request
            self._targets = direct_targets(self.fastapi_app, self.operations)
        return self._targets.get(scope["path"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = self._target(scope)
        if target is None:
            await self.app(scope, receive, send)
            return
        body = await _whole_body(receive)
        if body is None:  # the client left mid-body: the app's own path reports it
            await self.app(scope, receive, send)
            return
        replay = replay_body(body, receive)
        request = Request(scope, replay)
        ready = await _well_formed(request, body, target.body_type)
        if ready is None:
            await self.app(scope, replay_body(body, receive), send)
            return
        grant, validated = ready
        route = target.route
        scope["route"] = route  # read by the access log and the metrics
        scope["endpoint"] = route.endpoint
        scope["path_params"] = {}
        assert isinstance(self.app, ExceptionMiddleware)  # else no target (`_target`)
        scope["starlette.exception_handlers"] = _handlers_of(self.app)

        async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
            response: Response = await route.endpoint(request=request, grant=grant, body=validated)
            await response(scope, receive, send)

        # Starlette's own choice of handler, as the route's wrapper makes it: a status
        # code's handler before a class's, a sync handler in a thread, none once answering.
        await wrap_app_handling_exceptions(endpoint, request)(scope, replay, send)


async def _whole_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _well_formed(
    request: Request, body: bytes, body_type: TypeAdapter[Any]
) -> tuple[Any, Any] | None:
    """(grant, validated body) of a well-formed call, else None (the app answers it).

    The same checks as FastAPI's, in its order: the bearer scheme and the caller's key, then
    the body as JSON, then the model in Python mode (as FastAPI validates a JSON body)."""
    if get_telemetry_data() is not None:
        return None
    if request.headers.get("content-type") != "application/json" or not body:
        return None
    try:
        grant = await caller(request, await bearer(request))
        return grant, body_type.validate_python(json.loads(body), from_attributes=True)
    except Exception:  # a refusal or an invalid body: the app raises it again
        return None


def _handlers_of(middleware: ExceptionMiddleware) -> tuple[ExceptionHandlers, StatusHandlers]:
    """The handlers the exception middleware gives the router's routes (its scope entry):
    the app's, without the server-error layer's (500 and Exception)."""
    return middleware._exception_handlers, middleware._status_handlers
