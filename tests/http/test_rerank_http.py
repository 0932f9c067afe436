"""Rerank status, the redacted trace and the status metric over a real loopback server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from powercontext.client import SyncPowerContextClient
from powercontext.memory.models import SearchMemoryRequest
from powercontext.server import create_app
from tests.http.conftest import Served, _settings
from tests.http.live import SECRET, live_server, scripted_reranker, with_reranker

SCOPE = "rerank-http"
# The trigger words are in every entry so the fts channel admits the whole pool for them.
TEXTS = [
    f"checklist item {i} billing raise-timeout raise-unavailable raise-invalid" for i in range(8)
]


@pytest.fixture(scope="module")
def fail_open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("failopen") / "failopen.db"
    reranker = scripted_reranker()

    factory = with_reranker(reranker)

    settings = _settings(db, "none", memory_rerank_failure_policy="fail_open")  # type: ignore[arg-type]
    with live_server(create_app(settings, runtime_factory=factory)) as server:
        served = Served(url=server.url, db_path=db, reranker=reranker)
        with served.client() as client:
            body = {"scope_id": SCOPE, "entries": [{"text": t} for t in TEXTS]}
            assert client.post("/v1/memory/remember", json=body).status_code == 200
        yield served


def _search(served: Served, query: str, **extra: object) -> dict[str, object]:
    with served.client() as client:
        response = client.post(
            "/v1/memory/search", json={"scope_id": SCOPE, "query": query, "limit": 3, **extra}
        )
    assert response.status_code == 200, response.text
    payload = response.json()
    assert isinstance(payload, dict)
    return payload


def test_default_response_has_status_and_no_trace(fail_open_server: Served) -> None:
    payload = _search(fail_open_server, "billing checklist")
    assert payload["rerank_status"] == "applied"
    assert "rerank" not in payload
    assert set(payload) == {"memory_ref", "mode", "hits", "rerank_status"}


def test_redacted_trace_has_ranks_and_no_candidate_text(fail_open_server: Served) -> None:
    payload = _search(fail_open_server, "billing checklist", include_rerank="redacted")
    trace = payload["rerank"]
    assert isinstance(trace, dict)
    assert trace["policy_id"] == "tests.scripted.v1" and trace["rerank_status"] == "applied"
    assert trace["candidate_count"] == 8 and trace["selected_ranks"] == [8, 7, 6]
    assert trace["cache_hit"] is False and trace["usage"]["requests"] == 0
    assert trace["latency_ms"] >= 0
    assert "candidate_hits" not in trace
    dumped = str(trace)
    assert not any(text in dumped for text in TEXTS) and "billing" not in dumped


def test_fail_open_is_visible_in_response_trace_and_metric(fail_open_server: Served) -> None:
    payload = _search(fail_open_server, "billing raise-timeout", include_rerank="redacted")
    assert payload["rerank_status"] == "degraded_provider_error"
    trace = payload["rerank"]
    assert isinstance(trace, dict) and trace["selected_ranks"] == [1, 2, 3]
    assert SECRET not in str(payload)
    with fail_open_server.client() as client:
        metrics = client.get("/metrics").text
    line = 'powercontext_memory_rerank_status_total{status="degraded_provider_error"}'
    assert any(m.startswith(line) and float(m.split()[-1]) >= 1 for m in metrics.splitlines())


def test_invalid_output_is_served_degraded_under_fail_open(fail_open_server: Served) -> None:
    """Issue 19 item 5: output that stays invalid (a poisoned entry steering the model) no
    longer fails every search that pools it; the status and the metric say why."""
    payload = _search(fail_open_server, "billing raise-invalid", include_rerank="redacted")
    assert payload["rerank_status"] == "degraded_invalid_output"
    trace = payload["rerank"]
    assert isinstance(trace, dict) and trace["selected_ranks"] == [1, 2, 3]
    assert trace["rerank_status"] == "degraded_invalid_output"
    assert SECRET not in str(payload)
    with fail_open_server.client() as client:
        metrics = client.get("/metrics").text
    line = 'powercontext_memory_rerank_status_total{status="degraded_invalid_output"}'
    assert any(m.startswith(line) and float(m.split()[-1]) >= 1 for m in metrics.splitlines())


def test_unknown_include_rerank_is_refused(fail_open_server: Served) -> None:
    with fail_open_server.client() as client:
        response = client.post(
            "/v1/memory/search",
            json={"scope_id": SCOPE, "query": "billing", "include_rerank": "full"},
        )
    assert response.status_code == 422


def test_sdk_exposes_status_and_redacted_trace(fail_open_server: Served) -> None:
    with SyncPowerContextClient(fail_open_server.url) as client:
        memory = client.memory.for_scope(SCOPE)
        plain = memory.search(SearchMemoryRequest(query="billing checklist", limit=3))
        traced = memory.search(
            SearchMemoryRequest(query="billing raise-unavailable", limit=2),
            include_rerank="redacted",
        )
    assert plain.rerank_status == "applied" and plain.rerank_redacted is None
    assert plain.rerank is None
    assert traced.rerank_status == "degraded_provider_error"
    assert traced.rerank_redacted is not None and traced.rerank_redacted.selected_ranks == (1, 2)
    assert traced.rerank_redacted.candidate_count == 8


def test_disabled_without_a_reranker(bare_server: Served) -> None:
    with bare_server.client() as client:
        client.post("/v1/memory/remember", json={"scope_id": "bare-rr", "text": "hello world"})
        payload = client.post(
            "/v1/memory/search",
            json={"scope_id": "bare-rr", "query": "hello", "include_rerank": "redacted"},
        ).json()
    assert payload["rerank_status"] == "disabled" and "rerank" not in payload


def test_fail_closed_deployment_reports_status_only_when_asked(
    open_server: Served, fresh_scope: str
) -> None:
    with open_server.client() as client:
        client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "deploy alpha"})
        body = {"scope_id": fresh_scope, "query": "deploy", "mode": "fts"}
        plain = client.post("/v1/memory/search", json=body).json()
        asked = client.post("/v1/memory/search", json=body | {"include_rerank": "redacted"})
    assert set(plain) == {"memory_ref", "mode", "hits"}
    assert asked.json()["rerank_status"] == "applied"
    assert asked.json()["rerank"]["candidate_count"] == 1
    with SyncPowerContextClient(open_server.url) as sdk:
        page = sdk.memory.for_scope(fresh_scope).search(SearchMemoryRequest(query="deploy"))
    assert page.rerank_status is None and page.rerank_redacted is None
