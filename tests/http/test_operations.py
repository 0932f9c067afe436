"""Every surface is registered from the one table of operations (server/operations.py)."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.memory.error_codes import ERRORS, described
from powercontext.server import create_app, handlers
from powercontext.server.calls import Call
from powercontext.server.contract import generate_openapi
from powercontext.server.mcp import MEMORY_TOOLS
from powercontext.server.operations import OPERATIONS, _reads
from powercontext.server.routes import COMMON_ERRORS
from powercontext.server.schemas import HeadRequest, HeadResponse
from powercontext.server.ui.routes import API_PATH, ui_router
from tests.http.conftest import Served
from tests.http.test_mcp import _ok, _unique, mcp_client


def test_every_http_route_comes_from_its_row_with_errors_from_the_error_table() -> None:
    paths = generate_openapi(create_app())["paths"]
    for operation in OPERATIONS:
        if operation.http is None:  # MCP only: export and import a page at a time
            assert operation.tools and operation.handler is not None
            assert operation.name not in {p.strip("/").split("/")[-1] for p in paths}
            continue
        served = paths[operation.http.path][operation.http.method.lower()]
        assert served["operationId"] == operation.operation_id
        assert served["summary"] == operation.summary
        for status in {*COMMON_ERRORS, *operation.http.errors}:
            assert served["responses"][str(status)]["description"] == described(status)


def test_a_handler_docstring_gives_the_summary_and_the_tool_description() -> None:
    row = _reads(handlers.head, "POST /v1/memory/head", (404,), inspector=_view)
    assert row.summary == "Head revision"
    assert row.tools[0].description == "The scope's head revision (null for an empty scope)."
    assert (row.tools[0].name, row.tools[0].title) == ("head", "Head")
    assert row.inspector is not None
    assert (row.inspector.method, row.inspector.path) == ("POST", "/_view")


async def _view(call: Call, body: Any) -> dict[str, Any]:
    return {}


async def _undocumented(call: Call, body: HeadRequest) -> HeadResponse:
    """Only a summary, no description for the tool."""
    raise AssertionError


def test_a_row_refuses_a_handler_without_a_description_or_a_malformed_route() -> None:
    with pytest.raises(TypeError, match="_undocumented"):
        _reads(_undocumented, "POST /v1/x")
    with pytest.raises(ValueError, match="PUT /v1/memory/head"):
        _reads(handlers.head, "PUT /v1/memory/head")


def test_every_error_status_description_names_each_of_its_codes() -> None:
    for spec in ERRORS:
        assert spec.description
        if spec.domain is not None:
            assert f"{spec.code}: " in described(spec.status)


def test_mcp_tools_and_inspector_routes_are_the_rows_ones() -> None:
    assert [tool.name for tool in MEMORY_TOOLS] == [
        tool.name for operation in OPERATIONS for tool in operation.tools
    ]
    for tool in MEMORY_TOOLS:
        assert tool.annotations.read_only_hint is (not tool.operation.writes)
    inspector = {route.path for route in ui_router.routes}  # type: ignore[attr-defined]
    for operation in OPERATIONS:
        if operation.inspector is not None:
            assert API_PATH + operation.inspector.path in inspector


def _found(page: dict[str, Any]) -> list[str]:
    return [hit["text"] for hit in page["hits"]]


async def test_mcp_search_honours_the_same_fields_as_http_search(
    open_server: Served, fresh_scope: str
) -> None:
    word = _unique("plover")
    with open_server.client() as http:
        for text, kind in ((f"the {word} sings", "fact"), (f"a {word} sleeps", "note")):
            body = {"scope_id": fresh_scope, "text": text, "kind": kind}
            http.post("/v1/memory/remember", json=body).raise_for_status()
        searches = {
            "filter": {"scope_id": fresh_scope, "query": word, "filter": {"kinds": ["note"]}},
            "revision": {"scope_id": fresh_scope, "query": word, "revision": 1},
            "trace": {"scope_id": fresh_scope, "query": word, "include_rerank": "redacted"},
        }
        async with mcp_client(open_server) as client:
            answers = {}
            for name, body in searches.items():
                over_http = http.post("/v1/memory/search", json=body).json()
                over_mcp = _ok(await client.call_tool("search", body))
                assert _found(over_mcp) == _found(over_http), name
                assert over_mcp["memory_ref"] == over_http["memory_ref"], name
                assert over_mcp.keys() == over_http.keys(), name
                answers[name] = over_mcp
    assert _found(answers["filter"]) == [f"a {word} sleeps"]
    assert _found(answers["revision"]) == [f"the {word} sings"]
    assert answers["revision"]["memory_ref"]["revision"] == 1
    assert answers["trace"]["rerank_status"] is not None
    assert answers["trace"]["rerank"] is not None
