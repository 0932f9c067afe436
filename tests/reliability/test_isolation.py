"""Isolation: scoped keys on every route the app serves; memory text, queries and the rerank
trace never in logs or over HTTP; the bounds on query length, body and batch size.

tests/http/test_auth.py checks each memory route against scoped keys; the first test here
makes sure that list is every memory route the application actually has.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from powercontext.config import DatabaseConfig, HttpConfig, InferenceConfig, ServerSettings
from powercontext.server import create_app
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    RecordedRequest,
    Reply,
    error_reply,
    tool_call,
)
from tests.http import test_auth
from tests.http.conftest import KEY_A, KEY_B, Served
from tests.http.live import live_server, with_reranker
from tests.reliability.test_provider_faults import openai_reranker

TEXT_MARKER = "zq7marker memo of the launch budget"
UNSELECTED = "zq8unselected launch budget draft"
QUERY_MARKER = "zq9query memo of the launch budget"
SCOPE_MARKER = "scope-zq6-private"
MARKERS = ("zq7marker", "zq8unselected", "zq9query")
"""Memory text and queries: in no log record, no error response, no metric."""


def test_the_auth_matrix_covers_every_memory_route() -> None:
    # The paths FastAPI generates from the routes it actually mounted (not the committed file).
    paths = set(create_app(ServerSettings()).generated_openapi()["paths"])
    memory = {path.removeprefix("/v1/memory/") for path in paths if path.startswith("/v1/memory/")}
    assert memory == set(test_auth.ROUTES) | set(test_auth.STREAMED_ROUTES)
    # Everything else is operational and carries no scope data, except /v1/scopes, which
    # lists only the scopes the key may use (tests/http/test_entry_routes.py), and
    # /v1/scopes/forget, refused for another scope's key (tests/http/test_forget_http.py).
    assert {p for p in paths if not p.startswith("/v1/memory/")} == {
        "/v1/health",
        "/v1/ready",
        "/metrics",
        "/v1/scopes",
        "/v1/scopes/forget",
    }


def test_a_scoped_key_reads_nothing_of_other_scopes_anywhere(auth_server: Served) -> None:
    with auth_server.client(KEY_B) as owner:
        owner.post("/v1/memory/remember", json={"scope_id": "scope-b", "text": TEXT_MARKER})
    with auth_server.client(KEY_A) as other:
        for route in test_auth.ROUTES:
            response = other.post(f"/v1/memory/{route}", json=test_auth._body(route, "scope-b"))
            assert response.status_code == 403 and "zq7marker" not in response.text
        for path in ("/v1/health", "/v1/ready", "/metrics", "/openapi.json"):
            assert "zq7marker" not in other.get(path).text


def _select_first(request: RecordedRequest) -> Reply:
    return tool_call('{"ranks": [1]}')(request)


@pytest.fixture(scope="module")
def reranked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeOpenAIServer]]:
    """A server whose searches go through the built-in reranker on the real openai path."""
    with FakeOpenAIServer() as fake:
        reranker = openai_reranker(fake.base_url, 5.0)

        factory = with_reranker(reranker)

        settings = ServerSettings(
            database=DatabaseConfig(url=f"sqlite:///{tmp_path_factory.mktemp('iso') / 'l.db'}"),
            inference=InferenceConfig(embedding_model="none"),
            http=HttpConfig(max_body_bytes=65_536),
        )
        with live_server(create_app(settings, runtime_factory=factory)) as server:
            yield server.url, fake


def _dump(record: logging.LogRecord) -> str:
    text = f"{record.getMessage()} {record.__dict__}"
    if record.exc_info:
        text += "".join(traceback.format_exception(*record.exc_info))
    return text


def test_memory_text_queries_and_the_trace_never_reach_logs_or_responses(
    reranked: tuple[str, FakeOpenAIServer], caplog: pytest.LogCaptureFixture
) -> None:
    url, fake = reranked
    fake.script_chat(_select_first, _select_first, error_reply(500, f"echo {TEXT_MARKER}"))
    responses: list[httpx.Response] = []
    with caplog.at_level(logging.DEBUG), httpx.Client(base_url=url, timeout=30) as client:

        def post(path: str, **kwargs: Any) -> httpx.Response:
            responses.append(client.post(path, **kwargs))
            return responses[-1]

        entries = [{"text": TEXT_MARKER, "metadata": {"note": "zq7marker"}}, {"text": UNSELECTED}]
        post("/v1/memory/remember", json={"scope_id": SCOPE_MARKER, "entries": entries})
        search = {"scope_id": SCOPE_MARKER, "query": QUERY_MARKER, "limit": 1, "mode": "fts"}
        found = post("/v1/memory/search", json=search)
        post("/v1/memory/search", json=search | {"limit": 2})
        failed = post("/v1/memory/search", json=search)  # the provider answers 500
        post("/v1/memory/search", json=search | {"limit": "zq9query"})  # 422
        post("/v1/memory/remember", json={"scope_id": SCOPE_MARKER, "text": "zq7marker" * 9000})
        post(
            "/v1/memory/remember",
            json={"scope_id": SCOPE_MARKER, "text": TEXT_MARKER, "expected_revision": 0},
        )
        metrics = client.get("/metrics")
    assert found.status_code == 200, found.text
    (hit,) = found.json()["hits"]
    assert hit["text"] == TEXT_MARKER  # the selected hit, and nothing of the trace
    assert set(found.json()) == {"memory_ref", "mode", "hits"}
    assert failed.status_code == 503
    assert [r.status_code for r in responses[-3:]] == [422, 413, 409]
    for response in responses:
        if response.request.url.path.endswith("/search"):  # the trace's candidates stay inside
            for word in ("zq8unselected", "candidate_hits", "selected_ranks", "discarded"):
                assert word not in response.text
        if response.status_code >= 400:
            leaked = [marker for marker in MARKERS if marker in response.text]
            assert not leaked, (response.status_code, response.text[:400])
    assert not any(marker in metrics.text for marker in (*MARKERS, "zq6"))  # nor scope ids
    # The model did see the query and the candidates: the markers were really in play.
    sent = str([request.body for request in fake.chat_requests])
    assert "zq9query" in sent and "zq8unselected" in sent
    access = [r for r in caplog.records if r.name == "powercontext.http.access"]
    assert len(access) >= len(responses)
    rerank_lines = [r for r in caplog.records if r.name == "powercontext.memory.rerank"]
    assert len(rerank_lines) == 2
    for record in caplog.records:
        dumped = _dump(record)
        leaked = [marker for marker in MARKERS if marker in dumped]
        assert not leaked, f"{record.name}: {dumped[:500]}"


@pytest.mark.parametrize(
    ("query", "status"),
    [("é" * 4096, 200), ("é" * 4096 + "e", 422), ("x" * 8192, 200), ("x" * 8193, 422)],
)
def test_query_length_is_bounded_in_utf8_bytes(
    bare_server: Served, query: str, status: int
) -> None:
    with bare_server.client() as client:
        response = client.post("/v1/memory/search", json={"scope_id": "bounds", "query": query})
    assert response.status_code == status, response.text[:300]
    if status == 422:
        assert response.json()["error"]["code"] == "validation_error"
        assert query[:50] not in response.text  # the refused input is not echoed
