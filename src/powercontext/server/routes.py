"""HTTP v1 routes: the memory operations registered from `OPERATIONS`, and the probes.

Every memory route authenticates first (a FastAPI dependency resolved before the body is
validated), then `Operation.perform` checks the operation's scope rule before its handler
runs.
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
from powercontext.server.calls import Call, declare_endpoint
from powercontext.server.contract import RAW_SCHEMAS
from powercontext.server.metrics import CONTENT_TYPE
from powercontext.server.operations import OPERATIONS, HttpRoute, Operation
from powercontext.server.schemas import ErrorEnvelope, HealthResponse, ReadyResponse
from powercontext.server.state import ServerState, state_of

__all__ = ["ServerState", "register_operations", "router", "state_of"]

COMMON_ERRORS = (401, 403, 413, 422, 500, 503)


def error_responses(*extra: int, raw_json: bool = False) -> dict[int | str, dict[str, Any]]:
    """The documented error answers of a route, described from the error table.

    `raw_json`: the route answers another media type when it succeeds (NDJSON), and FastAPI
    would document a `model` under that type; errors are JSON, so they name the schema."""
    if raw_json:
        envelope = {"schema": {"$ref": f"#/components/schemas/{ErrorEnvelope.__name__}"}}
        return {
            status: {"description": described(status), "content": {"application/json": envelope}}
            for status in sorted({*COMMON_ERRORS, *extra})
        }
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
        return _json(await operation.perform(call, body))

    body = operation.request if route.method == "POST" and raw is None else None
    return declare_endpoint(endpoint, operation.operation_id, body)


def _raw_openapi(operation: Operation, route: HttpRoute) -> dict[str, Any] | None:
    """What a raw route reads itself, documented from its models: the query parameters
    (`route.query`) and, for a POST, the request body."""
    if route.raw is None:
        return None
    extra: dict[str, Any] = {RAW_SCHEMAS: {}}
    if route.query is not None:
        extra["parameters"] = _query_parameters(route.query, extra[RAW_SCHEMAS])
    if route.method == "POST":
        schema = TypeAdapter(operation.request).json_schema(
            ref_template="#/components/schemas/{model}", mode="validation"
        )
        extra[RAW_SCHEMAS].update(schema.pop("$defs", {}))
        content = {route.request_media_type: {"schema": schema}}
        extra["requestBody"] = {"required": True, "content": content}
    return extra


def _query_parameters(query: type[BaseModel], nested: dict[str, Any]) -> list[dict[str, Any]]:
    schema = query.model_json_schema(ref_template="#/components/schemas/{model}")
    nested.update(schema.pop("$defs", {}))
    required = set(schema.get("required", ()))
    return [
        {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": field,
            "description": field.get("description", ""),
        }
        for name, field in schema["properties"].items()
    ]


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
            responses=error_responses(
                *route.errors, raw_json=route.response_media_type != "application/json"
            ),
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
