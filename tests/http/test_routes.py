"""Every route through a real uvicorn server, with raw httpx."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx

from powercontext.config import DatabaseConfig, InferenceConfig, ServerSettings
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime, open_runtime
from powercontext.server import create_app
from powercontext.testing import FakeEmbedder
from tests.http.conftest import Served
from tests.http.live import SECRET, live_server

HIT_KEYS = {
    "citation",
    "kind",
    "text",
    "metadata",
    "score",
    "matched_by",
    "thread",
    "occurred_at",
    "explain",
}


def _remember(client: httpx.Client, scope: str, text: str, **extra: Any) -> dict[str, Any]:
    response = client.post("/v1/memory/remember", json={"scope_id": scope, "text": text, **extra})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_entry_lifecycle_over_http(open_server: Served, fresh_scope: str) -> None:
    with open_server.client() as client:
        written = _remember(
            client, fresh_scope, "We deploy on Fridays.", kind="decision", metadata={"team": "ops"}
        )
        assert written["memory_ref"] == {"scope_id": fresh_scope, "revision": 1}
        entry = written["entries"][0]
        assert (entry["kind"], entry["text"], entry["metadata"]) == (
            "decision",
            "We deploy on Fridays.",
            {"team": "ops"},
        )
        citation = entry["citation"]

        got = client.post(
            "/v1/memory/entries/get", json={"scope_id": fresh_scope, "citation": citation}
        )
        assert (
            got.status_code == 200
            and got.json()["entry_version_id"] == citation["entry_version_id"]
        )

        revised = client.post(
            "/v1/memory/entries/revise",
            json={"scope_id": fresh_scope, "citation": citation, "text": "We deploy on Mondays."},
        ).json()
        assert revised["memory_ref"]["revision"] == 2
        new = revised["entries"][0]
        assert new["entry_id"] == entry["entry_id"] and new["version"] == 2
        assert new["kind"] == "decision" and new["metadata"] == {"team": "ops"}

        # The old citation still resolves to the old text, forever.
        old = client.post(
            "/v1/memory/entries/get", json={"scope_id": fresh_scope, "citation": citation}
        ).json()
        assert old["text"] == "We deploy on Fridays."

        retired = client.post(
            "/v1/memory/entries/retire",
            json={"scope_id": fresh_scope, "citation": new["citation"], "reason": "obsolete"},
        ).json()
        assert retired["memory_ref"]["revision"] == 3 and retired["entries"] == []

        listed = client.post("/v1/memory/entries/list", json={"scope_id": fresh_scope}).json()
        assert listed["entries"] == [] and listed["memory_ref"]["revision"] == 3

        reactivated = client.post(
            "/v1/memory/entries/reactivate",
            json={"scope_id": fresh_scope, "citation": new["citation"]},
        ).json()
        assert reactivated["entries"][0]["version"] == 3

        changes = client.post("/v1/memory/changes", json={"scope_id": fresh_scope}).json()
        ops = [(c["revision"], c["op"]) for c in changes["changes"]]
        assert ops == [(1, "add"), (2, "revise"), (3, "retire"), (4, "reactivate")]
        assert changes["changes"][2]["reason"] == "obsolete"
        assert changes["next_since_revision"] == 4

        later = client.post(
            "/v1/memory/changes", json={"scope_id": fresh_scope, "since_revision": 3}
        ).json()
        assert [c["op"] for c in later["changes"]] == ["reactivate"]

        head = client.post("/v1/memory/head", json={"scope_id": fresh_scope}).json()
        assert head == {"memory_ref": {"scope_id": fresh_scope, "revision": 4}}


def test_batch_is_one_revision_and_lists_in_pages(open_server: Served, fresh_scope: str) -> None:
    entries = [{"kind": "fact", "text": f"fact number {i}", "metadata": {"i": i}} for i in range(7)]
    with open_server.client() as client:
        written = client.post(
            "/v1/memory/remember",
            json={"scope_id": fresh_scope, "entries": entries, "expected_revision": 0},
        ).json()
        assert written["memory_ref"]["revision"] == 1 and len(written["entries"]) == 7

        seen: list[str] = []
        cursor = None
        while True:
            body: dict[str, Any] = {"scope_id": fresh_scope, "limit": 3}
            if cursor:
                body["cursor"] = cursor
            page = client.post("/v1/memory/entries/list", json=body).json()
            seen += [e["text"] for e in page["entries"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [f"fact number {i}" for i in range(7)]


def test_search_returns_final_hits_only(open_server: Served, fresh_scope: str) -> None:
    assert open_server.reranker is not None
    with open_server.client() as client:
        for text in ("deploy alpha", "deploy beta", "deploy gamma", "unrelated lunch menu"):
            _remember(client, fresh_scope, text)
        calls = len(open_server.reranker.calls)
        response = client.post(
            "/v1/memory/search",
            json={"scope_id": fresh_scope, "query": "deploy", "limit": 2, "mode": "fts"},
        )
    assert response.status_code == 200
    page = response.json()
    assert len(open_server.reranker.calls) == calls + 1
    assert set(page) == {"memory_ref", "mode", "hits"}
    assert page["mode"] == "fts" and page["memory_ref"]["revision"] == 4
    assert len(page["hits"]) == 2
    for hit in page["hits"]:
        assert set(hit) == HIT_KEYS
        assert hit["citation"]["memory_ref"] == page["memory_ref"]
        assert hit["matched_by"] == ["fts"]
    for word in ("rerank", "candidate_hits", "selected_ranks", "policy_id", "unrelated"):
        assert word not in response.text


def test_search_of_an_empty_scope(open_server: Served, fresh_scope: str) -> None:
    with open_server.client() as client:
        page = client.post(
            "/v1/memory/search", json={"scope_id": fresh_scope, "query": "anything"}
        ).json()
    assert page["memory_ref"] is None and page["hits"] == []


def test_request_id_is_echoed_or_generated_on_every_response(open_server: Served) -> None:
    with open_server.client() as client:
        echoed = client.get("/v1/health", headers={"X-Request-ID": "trace-123.abc"})
        assert echoed.headers["x-request-id"] == "trace-123.abc"
        generated = client.get("/v1/health")
        assert len(generated.headers["x-request-id"]) == 32
        unsafe = client.get("/v1/health", headers={"X-Request-ID": "x" * 200})
        assert unsafe.headers["x-request-id"] != "x" * 200
        for response in (
            client.post("/v1/memory/search", json={}, headers={"X-Request-ID": "err-1"}),
            client.get("/no/such/route", headers={"X-Request-ID": "err-2"}),
            client.get("/v1/memory/search", headers={"X-Request-ID": "err-3"}),
        ):
            assert response.status_code >= 400
            assert response.headers["x-request-id"].startswith("err-")
            assert set(response.json()["error"]) == {"code", "message", "details"}


def test_health_ready_and_metrics(open_server: Served, fresh_scope: str) -> None:
    with open_server.client() as client:
        assert client.get("/v1/health").json()["status"] == "ok"
        ready = client.get("/v1/ready")
        assert ready.status_code == 200
        checks = ready.json()["checks"]
        assert checks["database"]["ok"] and checks["embedding_model"]["ok"]
        assert "tests.scripted.v1" in checks["memory_reranker"]["detail"]

        _remember(client, fresh_scope, "metrics are counted")
        client.post("/v1/memory/search", json={"scope_id": fresh_scope, "query": "metrics"})
        metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert (
        'powercontext_http_requests_total{method="POST",route="/v1/memory/search",status="200"}'
        in text
    )
    assert 'powercontext_memory_searches_total{mode="hybrid"}' in text
    assert "powercontext_memory_rerank_calls_total" in text
    assert "powercontext_memory_rerank_duration_seconds_bucket" in text
    assert 'route="/v1/memory/search"' in text and "metrics are counted" not in text


def test_unknown_fields_are_rejected(open_server: Served, fresh_scope: str) -> None:
    with open_server.client() as client:
        response = client.post(
            "/v1/memory/search", json={"scope_id": fresh_scope, "query": "x", "rerank": True}
        )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


def test_ready_reports_a_broken_model_and_caches_the_probe(tmp_path: Path) -> None:
    embedder = FakeEmbedder(fail_documents=True, fail_queries=True, failure_message=SECRET)

    def factory(
        settings: ServerSettings, observer: SearchObserver
    ) -> AbstractAsyncContextManager[Runtime]:
        return open_runtime(settings, embedding_model=embedder, search_observer=observer)

    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'ready.db'}"),
        inference=InferenceConfig(embedding_model="none"),
    )
    with (
        live_server(create_app(settings, runtime_factory=factory)) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        first = client.get("/v1/ready")
        second = client.get("/v1/ready")
        # The write stands though embedding failed; auto search falls back to fts.
        written = client.post("/v1/memory/remember", json={"scope_id": "s", "text": "kept"})
        found = client.post("/v1/memory/search", json={"scope_id": "s", "query": "kept"})
    assert first.status_code == 503 and second.status_code == 503
    report = first.json()
    assert report["status"] == "not_ready" and report["checks"]["database"]["ok"]
    assert report["checks"]["embedding_model"] == {
        "ok": False,
        "detail": f"{embedder.profile.profile_id} failed (ConnectionError)",
    }
    assert SECRET not in first.text
    assert embedder.calls == 2  # one readiness probe (cached for the second) + the write
    assert written.json()["vectors_pending"] == 1
    assert found.json()["mode"] == "fts" and len(found.json()["hits"]) == 1
