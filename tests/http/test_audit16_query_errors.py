"""A 422 `validation_error` for a query parameter of a JSON-lines route (export, import,
remember/stream) lists its `loc`, `msg` and `type` in `details.errors`, as the contract
promises for every validation_error and as a body's does; it used to carry `details: {}`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.http.conftest import Served

NDJSON = {"content-type": "application/x-ndjson"}
ENTRY = b'{"text": "a line"}\n'


def _details(answer: Any, message: str) -> list[dict[str, Any]]:
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "validation_error"
    assert error["message"].startswith(message)
    errors: list[dict[str, Any]] = error["details"]["errors"]
    return errors


@pytest.mark.parametrize(
    ("method", "path", "query", "loc", "type_"),
    [
        ("GET", "/v1/memory/export", "scope_id=s&revision=abc", "revision", "int_parsing"),
        ("GET", "/v1/memory/export", "revision=2", "scope_id", "missing"),
        ("POST", "/v1/memory/import", "scope_id=s&on_existing=x", "on_existing", "literal_error"),
        (
            "POST",
            "/v1/memory/remember/stream",
            "scope_id=s&expected_revision=-1",
            "expected_revision",
            "greater_than_equal",
        ),
        ("POST", "/v1/memory/remember/stream", "scope_id=s&red=1", "red", "extra_forbidden"),
    ],
)
def test_a_query_parameter_error_lists_where_and_why(
    bare_server: Served, method: str, path: str, query: str, loc: str, type_: str
) -> None:
    with bare_server.client() as http:
        answer = http.request(method, f"{path}?{query}", content=ENTRY, headers=NDJSON)
    (error,) = _details(answer, f"query.{loc}: ")
    assert error["loc"] == ["query", loc]
    assert error["type"] == type_
    assert answer.json()["error"]["message"] == f"query.{loc}: {error['msg']}"


def test_a_repeated_or_undecodable_parameter_lists_it_too(bare_server: Served) -> None:
    with bare_server.client() as http:
        twice = http.get("/v1/memory/export?scope_id=a&scope_id=b")
        undecodable = http.get("/v1/memory/export?scope_id=%FF")
    (error,) = _details(twice, "query.scope_id: given more than once; give it once")
    assert error["loc"] == ["query", "scope_id"]
    (error,) = _details(undecodable, "query.scope_id: not valid UTF-8 once percent-decoded")
    assert error["loc"] == ["query", "scope_id"]
