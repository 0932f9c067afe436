"""HTTP v1 routes: the memory operations registered from `OPERATIONS`, and the probes.

Every memory route authenticates first (a FastAPI dependency resolved before the body is
validated), then `perform` checks the operation's scope rule before its handler runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter
from starlette.responses import JSONResponse, Response

from powercontext import __version__
from powercontext.memory.error_codes import described
from powercontext.server.calls import Call, declare_endpoint, perform
from powercontext.server.contract import RAW_SCHEMAS
from powercontext.server.metrics import CONTENT_TYPE
from powercontext.server.operations import OPERATIONS, HttpRoute, Operation
from powercontext.server.schemas import ErrorEnvelope, HealthResponse, ReadyResponse
from powercontext.server.state import ServerState, state_of

__all__ = ["ServerState", "register_operations", "router", "state_of"]

COMMON_ERRORS = (401, 403, 413, 422, 500, 503)


def error_responses(*extra: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers of a route, described from the error table."""
    return {
        status: {"model": ErrorEnvelope, "description": described(status)}
        for status in sorted({*COMMON_ERRORS, *extra})
    }


def _json(model: BaseModel, status_code: int = 200) -> Response:
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


def _endpoint(operation: Operation, route: HttpRoute) -> Any:
    """The FastAPI endpoint of one row: its signature is built from the row's models, so
    FastAPI validates and documents the body exactly as a hand-written route would."""
    raw = route.raw

    async def endpoint(request: Request, grant: Any, body: Any = None) -> Response:
        call = Call(grant, state_of(request))
        if raw is not None:
            return await raw(call, request)
        if body is None:  # a GET: the request model takes no arguments
            body = operation.request()
        return _json(await perform(operation, call, body))

    body = operation.request if route.method == "POST" and raw is None else None
    return declare_endpoint(endpoint, operation.operation_id, body)


def _raw_openapi(operation: Operation, route: HttpRoute) -> dict[str, Any] | None:
    """The request body a raw POST route reads itself, documented with its model."""
    if route.raw is None or route.method != "POST":
        return None
    schema = TypeAdapter(operation.request).json_schema(
        ref_template="#/components/schemas/{model}", mode="validation"
    )
    nested = schema.pop("$defs", {})
    content = {route.request_media_type: {"schema": schema}}
    return {"requestBody": {"required": True, "content": content}, RAW_SCHEMAS: nested}


def _response_class(route: HttpRoute) -> type[Response]:
    """JSON, or a raw route's own type. Only the documentation uses it (a raw endpoint returns
    its own response); a JSONResponse subclass makes FastAPI document the response model."""
    if route.response_media_type == "application/json":
        return JSONResponse
    return type("RawResponse", (JSONResponse,), {"media_type": route.response_media_type})


def register_operations(router: APIRouter, operations: Iterable[Operation]) -> None:
    """Add the HTTP route of every operation that has one."""
    for operation in operations:
        route = operation.http
        if route is None:
            continue
        router.add_api_route(
            route.path,
            _endpoint(operation, route),
            methods=[route.method],
            response_model=operation.response,
            responses=error_responses(*route.errors),
            response_class=_response_class(route),
            summary=operation.summary,
            name=operation.operation_id,
            tags=["memory"],
            openapi_extra=_raw_openapi(operation, route),
        )


def _operation_id(route: APIRoute) -> str:
    return route.name


router = APIRouter(generate_unique_id_function=_operation_id)


@router.get("/v1/health", response_model=HealthResponse, tags=["operations"], summary="Liveness")
async def health() -> Response:
    return _json(HealthResponse(status="ok", version=__version__))


@router.get(
    "/v1/ready",
    response_model=ReadyResponse,
    tags=["operations"],
    summary="Readiness: database and configured models",
    responses={503: {"model": ReadyResponse, "description": "Some check failed."}},
)
async def ready(request: Request) -> Response:
    probe = state_of(request).readiness
    assert probe is not None, "the lifespan creates the probe before serving"
    report = await probe.check()
    return _json(report, 200 if report.status == "ready" else 503)


@router.get(
    "/metrics",
    tags=["operations"],
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    return Response(state_of(request).metrics.render(), media_type=CONTENT_TYPE)


register_operations(router, OPERATIONS)
