"""Every error code of the envelope, each produced by a real request to a real server."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.http.conftest import BATCH_LIMIT, BODY_LIMIT, Served
from tests.http.live import SECRET
from tests.http.test_mcp import _error_text, mcp_client


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["x-request-id"]
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    for leak in (SECRET, "Traceback", "SELECT ", "sqlite3"):
        assert leak not in response.text
    error: dict[str, Any] = body["error"]
    return error


def _citation(scope: str, revision: int = 1) -> dict[str, Any]:
    return {
        "memory_ref": {"scope_id": scope, "revision": revision},
        "entry_id": "0" * 32,
        "entry_version_id": "1" * 32,
    }


@pytest.mark.parametrize(
    "body",
    [
        {"text": "   "},
        {"text": "nul \x00 inside"},
        {"text": "é" * 4097},  # 8194 UTF-8 bytes, under 8192 characters
        {"text": "ok", "metadata": {"blob": "x" * 20_000}},
        {"text": "ok", "kind": "k" * 65},
        {"text": "ok", "expected_revision": -1},
        {"entries": []},
    ],
)
def test_validation_error(bare_server: Served, fresh_scope: str, body: dict[str, Any]) -> None:
    with bare_server.client() as client:
        response = client.post("/v1/memory/remember", json={"scope_id": fresh_scope, **body})
    error = _error(response, 422, "validation_error")
    assert error["details"]["errors"]
    assert all("input" not in e for e in error["details"]["errors"])


@pytest.mark.parametrize(
    ("body", "message", "loc"),
    [
        ({"text": "x"}, "scope_id: Field required", ["body", "scope_id"]),
        (
            {"scope_id": "s", "text": "x", "occurred_at": "yesterday"},
            "occurred_at: Input should be a valid datetime",
            ["body", "occurred_at"],
        ),
        (  # a batch is read as a batch: not "text: Field required"
            {"scope_id": "s", "entries": [{"text": "a"}, {"text": "b", "occurred_at": "8 May"}]},
            "entries.1.occurred_at: Input should be a valid datetime",
            ["body", "entries", "1", "occurred_at"],
        ),
    ],
)
def test_remember_errors_name_the_shape_sent(
    bare_server: Served, body: dict[str, Any], message: str, loc: list[str]
) -> None:
    with bare_server.client() as client:
        error = _error(client.post("/v1/memory/remember", json=body), 422, "validation_error")
    assert error["message"].startswith(message), error
    assert [e["loc"] for e in error["details"]["errors"]] == [loc]


def test_a_body_without_the_json_media_type_is_named(bare_server: Served) -> None:
    body = b'{"scope_id": "s", "query": "q"}'
    with bare_server.client() as client:
        form = client.post(
            "/v1/memory/search",
            content=body,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        array = client.post("/v1/memory/search", json=["s", "q"])
    assert _error(form, 422, "validation_error")["message"] == (
        "body: must be a JSON object sent with Content-Type: application/json "
        "(got Content-Type: application/x-www-form-urlencoded)"
    )
    assert _error(array, 422, "validation_error")["message"] == "body: must be a JSON object"


def test_validation_error_of_invalid_json_and_bounds(bare_server: Served) -> None:
    with bare_server.client() as client:
        _error(
            client.post(
                "/v1/memory/search",
                content=b'{"scope_id": "a", "query": ',
                headers={"content-type": "application/json"},
            ),
            422,
            "validation_error",
        )
        _error(
            client.post("/v1/memory/search", json={"scope_id": "a", "query": "q", "limit": 101}),
            422,
            "validation_error",
        )
        _error(
            client.post("/v1/memory/search", json={"scope_id": "", "query": "q"}),
            422,
            "validation_error",
        )
        _error(
            client.post(
                "/v1/memory/search",
                content=b'{"scope_id": "\xff\xfe", "query": "q"}',
                headers={"content-type": "application/json"},
            ),
            422,
            "validation_error",
        )


def test_capability_not_supported(bare_server: Served, fresh_scope: str) -> None:
    with bare_server.client() as client:
        client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "some text"})
        for mode in ("vector", "hybrid"):
            response = client.post(
                "/v1/memory/search",
                json={"scope_id": fresh_scope, "query": "text", "mode": mode},
            )
            error = _error(response, 422, "capability_not_supported")
            assert "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL" in error["message"]


def test_revision_conflict(bare_server: Served, fresh_scope: str) -> None:
    with bare_server.client() as client:
        first = client.post(
            "/v1/memory/remember", json={"scope_id": fresh_scope, "text": "one"}
        ).json()
        stale = client.post(
            "/v1/memory/remember",
            json={"scope_id": fresh_scope, "text": "two", "expected_revision": 0},
        )
        error = _error(stale, 409, "revision_conflict")
        assert error["details"] == {"expected_revision": 0, "actual_revision": 1}

        citation = first["entries"][0]["citation"]
        client.post(
            "/v1/memory/entries/revise",
            json={"scope_id": fresh_scope, "citation": citation, "text": "one, revised"},
        )
        again = client.post(
            "/v1/memory/entries/revise",
            json={"scope_id": fresh_scope, "citation": citation, "text": "from an old read"},
        )
        _error(again, 409, "revision_conflict")


def test_not_found(bare_server: Served, fresh_scope: str) -> None:
    with bare_server.client() as client:
        client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "exists"})
        for route in ("get", "revise", "retire", "reactivate"):
            body: dict[str, Any] = {"scope_id": fresh_scope, "citation": _citation(fresh_scope)}
            if route == "revise":
                body["text"] = "new text"
            _error(client.post(f"/v1/memory/entries/{route}", json=body), 404, "not_found")
        _error(
            client.post("/v1/memory/entries/list", json={"scope_id": fresh_scope, "revision": 9}),
            404,
            "not_found",
        )
        _error(client.get("/v1/no-such-route"), 404, "not_found")
        _error(client.get("/v1/memory/remember"), 405, "method_not_allowed")


def test_a_citation_not_found_names_the_scopes(bare_server: Served, fresh_scope: str) -> None:
    other = f"{fresh_scope}-other"
    with bare_server.client() as client:
        written = client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "x"})
        cited = written.json()["entries"][0]["citation"]
        copied = client.post("/v1/memory/entries/get", json={"scope_id": other, "citation": cited})
        unknown = client.post(
            "/v1/memory/entries/get",
            json={"scope_id": fresh_scope, "citation": _citation(fresh_scope)},
        )
    assert _error(copied, 404, "not_found")["message"] == (
        f"the citation is of scope {fresh_scope!r}, not {other!r}"
    )
    assert _error(unknown, 404, "not_found")["message"] == (
        f"the citation names no entry version in scope {fresh_scope!r}"
    )


def test_payload_too_large(bare_server: Served, fresh_scope: str) -> None:
    big = {"scope_id": fresh_scope, "entries": [{"text": "x" * 4000} for _ in range(20)]}
    with bare_server.client() as client:
        error = _error(client.post("/v1/memory/remember", json=big), 413, "payload_too_large")
        assert str(BODY_LIMIT) in error["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: the limit counts streamed bytes
            yield b'{"scope_id": "s", "entries": ['
            for _ in range(40):
                yield b'{"text": "' + b"y" * 4000 + b'"},'
            yield b'{"text": "end"}]}'

        streamed = client.post(
            "/v1/memory/remember", content=chunks(), headers={"content-type": "application/json"}
        )
        _error(streamed, 413, "payload_too_large")

        batch = {"scope_id": fresh_scope, "entries": [{"text": f"e{i}"} for i in range(51)]}
        error = _error(client.post("/v1/memory/remember", json=batch), 413, "payload_too_large")
        assert "MAX_BATCH_ENTRIES" in error["message"] and str(BATCH_LIMIT) in error["message"]
        # Nothing of the refused batch was written.
        head = client.post("/v1/memory/head", json={"scope_id": fresh_scope}).json()
        assert head["memory_ref"] is None


@pytest.mark.parametrize(
    ("marker", "status", "code"),
    [
        ("raise-timeout", 504, "inference_timeout"),
        ("raise-unavailable", 503, "inference_unavailable"),
        ("raise-invalid", 502, "inference_invalid_output"),
        ("raise-crash", 500, "internal_error"),
    ],
)
def test_inference_failures_fail_closed(
    open_server: Served, fresh_scope: str, marker: str, status: int, code: str
) -> None:
    metric = f'powercontext_memory_rerank_failures_total{{code="{code}"}}'
    with open_server.client() as client:
        client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "a fact"})
        before = _metric(client.get("/metrics").text, metric)
        response = client.post(
            "/v1/memory/search", json={"scope_id": fresh_scope, "query": f"fact {marker}"}
        )
        after = _metric(client.get("/metrics").text, metric)
    _error(response, status, code)
    # A failed rerank is counted, not only the ones that came back (a crash is a bug, a 500).
    assert after == before + (code != "internal_error")


def _metric(text: str, name: str) -> float:
    values = [line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith(name + " ")]
    return float(values[0]) if values else 0.0


def test_storage_unavailable_then_recovers(bare_server: Served, fresh_scope: str) -> None:
    blocker = sqlite3.connect(bare_server.db_path, isolation_level=None, timeout=0.1)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        with bare_server.client() as client:
            response = client.post(
                "/v1/memory/remember", json={"scope_id": fresh_scope, "text": "blocked write"}
            )
        error = _error(response, 503, "storage_unavailable")
        assert "busy" in error["message"]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    with bare_server.client() as client:
        response = client.post(
            "/v1/memory/remember", json={"scope_id": fresh_scope, "text": "after recovery"}
        )
        assert response.status_code == 200
        texts = [
            e["text"]
            for e in client.post("/v1/memory/entries/list", json={"scope_id": fresh_scope}).json()[
                "entries"
            ]
        ]
    assert texts == ["after recovery"]


async def test_a_rerank_that_fails_an_mcp_search_is_counted_too(
    open_server: Served, fresh_scope: str
) -> None:
    metric = 'powercontext_memory_rerank_failures_total{code="inference_timeout"}'
    with open_server.client() as client:
        client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "a fact"})
        before = _metric(client.get("/metrics").text, metric)
    async with mcp_client(open_server) as mcp:
        arguments = {"scope_id": fresh_scope, "query": "fact raise-timeout"}
        assert _error_text(await mcp.call_tool("search", arguments)).startswith("inference_timeout")
    with open_server.client() as client:
        assert _metric(client.get("/metrics").text, metric) == before + 1
