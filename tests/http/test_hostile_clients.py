"""What a hostile or clumsy client gets from a real server: a 422 that says what was wrong and
where, never a 500, and nothing written that could not be read back."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.http.conftest import KEY_A, Served

NDJSON = {"content-type": "application/x-ndjson"}
JSON = {"content-type": "application/json"}


def _nested(depth: int) -> bytes:
    """A metadata object whose value nests `depth` - 1 arrays: `depth` levels in all."""
    return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def _message(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    message: str = body["error"]["message"]
    return message


def _remember_bodies(scope: str, metadata: bytes) -> list[tuple[str, bytes, dict[str, str]]]:
    one = b'{"scope_id":"%s","text":"deploy on fridays","metadata":%s}' % (scope.encode(), metadata)
    batch = b'{"scope_id":"%s","entries":[{"text":"deploy","metadata":%s}]}' % (
        scope.encode(),
        metadata,
    )
    line = b'{"text":"deploy on fridays","metadata":%s}\n' % metadata
    return [
        ("/v1/memory/remember", one, JSON),
        ("/v1/memory/remember", batch, JSON),
        (f"/v1/memory/remember/stream?scope_id={scope}", line, NDJSON),
    ]


def test_metadata_too_deep_to_answer_is_refused_not_written(
    open_server: Served, fresh_scope: str
) -> None:
    # 150 levels parse (the JSON parsers allow more) but a response nests them deeper than the
    # serializer's 255: written, they made every later list, search and export of the scope 500.
    with open_server.client() as client:
        for route, body, headers in _remember_bodies(fresh_scope, _nested(150)):
            refused = client.post(route, content=body, headers=headers)
            assert "more than 100 levels deep" in _message(refused, 422, "validation_error")
        listed = client.post("/v1/memory/entries/list", json={"scope_id": fresh_scope})
        assert listed.status_code == 200 and listed.json()["entries"] == []
        for route, body, headers in _remember_bodies(fresh_scope, _nested(100)):
            assert client.post(route, content=body, headers=headers).status_code == 200
        found = client.post("/v1/memory/search", json={"scope_id": fresh_scope, "query": "deploy"})
        assert found.status_code == 200 and len(found.json()["hits"]) == 3


def test_revise_refuses_metadata_too_deep(open_server: Served, fresh_scope: str) -> None:
    with open_server.client() as client:
        written = client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "a"})
        citation = json.dumps(written.json()["entries"][0]["citation"]).encode()
        body = b'{"scope_id":"%s","citation":%s,"text":"b","metadata":%s}' % (
            fresh_scope.encode(),
            citation,
            _nested(101),
        )
        refused = client.post("/v1/memory/entries/revise", content=body, headers=JSON)
        assert _message(refused, 422, "validation_error").startswith("metadata: ")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"scope_id":"s","query":"\xff"}', "body: not valid UTF-8 (byte 25 cannot be decoded)"),
        (b'{"scope_id":"s",', "body (character 16): invalid JSON: Expecting property name"),
        (b'{"scope_id":"s","query":"q"} x', "body (character 29): invalid JSON: Extra data"),
        (b'{"scope_id":"s","query":' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
        (b'{"scope_id":"s","query":"q","limit":' + b"9" * 5000 + b"}", "more than 4300 digits"),
    ],
)
def test_an_unparsable_body_says_why(open_server: Served, body: bytes, message: str) -> None:
    with open_server.client() as client:
        answer = client.post("/v1/memory/search", content=body, headers=JSON)
    assert message in _message(answer, 422, "validation_error")


@pytest.mark.parametrize(
    ("method", "path", "status", "code", "message"),
    [
        ("POST", "/v1/no-such-route", 404, "not_found", "no route POST /v1/no-such-route"),
        ("GET", "/v1/memory/search", 405, "method_not_allowed", "GET is not allowed on"),
        ("DELETE", "/v1/health", 405, "method_not_allowed", "/v1/health; use GET"),
    ],
)
def test_framework_refusals_name_the_method_and_path(
    open_server: Served, method: str, path: str, status: int, code: str, message: str
) -> None:
    with open_server.client() as client:
        assert message in _message(client.request(method, path), status, code)


def _raw_routes(scope: str) -> list[tuple[str, str, bytes]]:
    return [
        ("GET", f"/v1/memory/export?scope_id={scope}", b""),
        ("POST", f"/v1/memory/remember/stream?scope_id={scope}", b'{"text":"a"}\n'),
        ("POST", f"/v1/memory/import?scope_id={scope}", b""),
    ]


def test_a_repeated_query_parameter_is_refused(open_server: Served, fresh_scope: str) -> None:
    # Starlette keeps the last one: the write would go to a scope the client named second.
    with open_server.client() as client:
        for method, path, body in _raw_routes(fresh_scope):
            answer = client.request(method, f"{path}&scope_id={fresh_scope}-2", content=body)
            message = _message(answer, 422, "validation_error")
            assert message == "query.scope_id: given more than once; give it once"
        scopes = [s["scope_id"] for s in client.get("/v1/scopes").json()["scopes"]]
    assert f"{fresh_scope}-2" not in scopes


def test_a_query_parameter_without_a_name_is_refused(open_server: Served) -> None:
    with open_server.client() as client:
        answer = client.get("/v1/memory/export?=x&scope_id=s")
    assert _message(answer, 422, "validation_error") == "query: a parameter has no name (`=value`)"


def test_a_query_that_is_not_utf8_is_refused(open_server: Served, fresh_scope: str) -> None:
    # Starlette decodes %FF to U+FFFD: the stream route wrote into a scope named "\ufffd...".
    scope = f"{fresh_scope}%FF"
    with open_server.client() as client:
        for method, path, body in _raw_routes(scope):
            answer = client.request(method, path, content=body)
            message = _message(answer, 422, "validation_error")
            assert message == "query.scope_id: not valid UTF-8 once percent-decoded"
        scopes = [s["scope_id"] for s in client.get("/v1/scopes").json()["scopes"]]
        assert not any(s.startswith(fresh_scope) for s in scopes)
        spelled = client.get("/v1/memory/export", params={"scope_id": f"{fresh_scope}-é"})
    assert _message(spelled, 404, "not_found") == f"scope '{fresh_scope}-é' has no revision yet"


def test_export_revision_past_the_storable_range(open_server: Served, fresh_scope: str) -> None:
    with open_server.client() as client:
        client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "a"})
        answer = client.get(
            "/v1/memory/export", params={"scope_id": fresh_scope, "revision": 2**63}
        )
    assert _message(answer, 422, "validation_error").startswith("query.revision: ")


@pytest.mark.parametrize(
    ("route", "body", "message"),
    [
        ("entries/by-id", {"entry_id": "a\x00b"}, "entry_id: Value error, must not contain NUL"),
        ("entries/history", {"entry_id": "\x00"}, "entry_id: Value error, must not contain NUL"),
        ("forget", {"entry_ids": ["ok", "\x00"]}, "entry_ids.1: Value error, must not contain NUL"),
        ("forget", {"entry_ids": ["x" * 129]}, "entry_ids.0: String should have at most 128"),
        ("forget", {"entry_ids": [""]}, "entry_ids.0: String should have at least 1 character"),
        ("entries/list", {"cursor": "c" * 257}, "cursor: String should have at most 256 char"),
        (
            "search",
            {"query": "q", "min_similarity": float("nan")},
            "min_similarity: Input should be a finite number",
        ),
    ],
)
def test_ids_cursors_and_floors_are_checked_with_their_name(
    open_server: Served, fresh_scope: str, route: str, body: dict[str, Any], message: str
) -> None:
    with open_server.client() as client:
        answer = client.post(
            f"/v1/memory/{route}",
            content=json.dumps({"scope_id": fresh_scope, **body}),
            headers=JSON,
        )
    assert _message(answer, 422, "validation_error").startswith(message)


def test_remember_stream_takes_a_byte_order_mark_before_line_one(
    open_server: Served, fresh_scope: str
) -> None:
    route = f"/v1/memory/remember/stream?scope_id={fresh_scope}"
    with open_server.client() as client:
        written = client.post(
            route, content=b'\xef\xbb\xbf{"text":"a"}\r\n{"text":"b"}', headers=NDJSON
        )
        assert written.status_code == 200, written.text
        assert [e["text"] for e in written.json()["entries"]] == ["a", "b"]
        inside = client.post(
            route, content=b'{"text":"a"}\n\xef\xbb\xbf{"text":"b"}\n', headers=NDJSON
        )
    assert _message(inside, 422, "validation_error").startswith("line 2: ")


def test_a_forbidden_scope_is_named(auth_server: Served) -> None:
    with auth_server.client(KEY_A) as client:
        answer = client.post("/v1/memory/head", json={"scope_id": "scope-b"})
    assert _message(answer, 403, "forbidden") == "this API key may not use scope 'scope-b'"
