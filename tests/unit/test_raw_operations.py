"""The table's escape hatch: a raw route reads its own body and may stream its answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from powercontext.server.auth import ApiKeyAuthority, KeyGrant
from powercontext.server.calls import Call
from powercontext.server.contract import RAW_SCHEMAS, generate_openapi
from powercontext.server.errors import install_error_handlers
from powercontext.server.metrics import ServerMetrics
from powercontext.server.operations import HttpRoute, Operation
from powercontext.server.routes import register_operations
from powercontext.server.state import ServerState

NDJSON = "application/x-ndjson"
KEY = "key-for-scope-s"


class ToyRef(BaseModel):
    scope_id: str


class ToyLine(BaseModel):
    ref: ToyRef
    n: int


class ToyCount(BaseModel):
    count: int


async def _export(call: Call, request: Request) -> Response:
    scope_id = request.query_params["scope_id"]
    call.grant.require(scope_id)

    async def lines() -> AsyncIterator[str]:
        for n in range(3):
            yield ToyLine(ref=ToyRef(scope_id=scope_id), n=n).model_dump_json() + "\n"

    return StreamingResponse(lines(), media_type=NDJSON)


async def _import(call: Call, request: Request) -> Response:
    count = 0
    async for chunk in request.stream():
        for line in chunk.decode().splitlines():
            if line.strip():
                call.grant.require(ToyLine.model_validate_json(line).ref.scope_id)
                count += 1
    return Response(ToyCount(count=count).model_dump_json(), media_type="application/json")


EXPORT = Operation(
    "toy_export",
    "Every line of a scope",
    ToyRef,
    ToyLine,
    None,
    writes=False,
    http=HttpRoute("GET", "/v1/toy/export", raw=_export, response_media_type=NDJSON),
)
IMPORT = Operation(
    "toy_import",
    "Lines into a scope",
    ToyLine,
    ToyCount,
    None,
    writes=True,
    http=HttpRoute("POST", "/v1/toy/import", raw=_import, request_media_type=NDJSON),
)


def _app() -> FastAPI:
    app = FastAPI()
    authority = ApiKeyAuthority({KEY: KeyGrant(frozenset({"s"}))}, enabled=True)
    app.state.powercontext = ServerState(authority=authority, metrics=ServerMetrics())
    install_error_handlers(app)
    router = APIRouter()
    register_operations(router, [EXPORT, IMPORT])
    app.include_router(router)
    return app


def test_a_raw_route_streams_its_answer_after_the_key_and_scope_checks() -> None:
    client = TestClient(_app())
    auth = {"Authorization": f"Bearer {KEY}"}
    assert client.get("/v1/toy/export", params={"scope_id": "s"}).status_code == 401
    refused = client.get("/v1/toy/export", params={"scope_id": "t"}, headers=auth)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    streamed = client.get("/v1/toy/export", params={"scope_id": "s"}, headers=auth)
    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith(NDJSON)
    assert [json.loads(line)["n"] for line in streamed.text.splitlines()] == [0, 1, 2]


def test_a_raw_route_reads_a_body_that_is_not_one_json_document() -> None:
    client = TestClient(_app())
    auth = {"Authorization": f"Bearer {KEY}"}
    lines = "".join(ToyLine(ref=ToyRef(scope_id="s"), n=n).model_dump_json() + "\n" for n in (1, 2))
    answered = client.post("/v1/toy/import", content=lines, headers=auth | {"content-type": NDJSON})
    assert answered.status_code == 200 and answered.json() == {"count": 2}


def test_raw_routes_document_their_media_types_and_models() -> None:
    schema = generate_openapi(_app())
    body = schema["paths"]["/v1/toy/import"]["post"]["requestBody"]["content"][NDJSON]["schema"]
    assert body["properties"]["ref"] == {"$ref": "#/components/schemas/ToyRef"}
    assert "ToyRef" in schema["components"]["schemas"]
    assert RAW_SCHEMAS not in schema["paths"]["/v1/toy/import"]["post"]
    answer = schema["paths"]["/v1/toy/export"]["get"]["responses"]["200"]["content"]
    assert answer == {NDJSON: {"schema": {"$ref": "#/components/schemas/ToyLine"}}}
    assert "403" in schema["paths"]["/v1/toy/export"]["get"]["responses"]
