"""A reranked search over HTTP v1 with a real local model (SmolLM2-135M through llama.cpp).

The server opens its runtime from settings alone, as `powercontext server run` does, so the
llama.cpp server starts and stops with it. The redacted trace is checked, not the ranking.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from powercontext.config import DatabaseConfig, RuntimeConfig, ServerSettings
from powercontext.server import create_app
from tests.http.live import live_server
from tests.local_model import requires_local_model, smollm2_inference

pytestmark = requires_local_model

SCOPE = "local-model-http"
TEXTS = [
    "The deploy of version 2.4 moved to Thursday after the database migration failed.",
    "Lunch on Thursday is pizza in the small meeting room.",
    "The database migration for version 2.4 needs a new index on orders.",
    "Holiday requests go to Dana before the end of the month.",
]


def test_reranked_search_over_http_reports_ranks_usage_and_latency(tmp_path: Path) -> None:
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'http.db'}"),
        inference=smollm2_inference(),
        runtime=RuntimeConfig(memory_rerank_enabled=True, memory_rerank_candidate_limit=4),
    )
    with (
        live_server(create_app(settings)) as server,
        httpx.Client(base_url=server.url, timeout=120) as client,
    ):
        body = {"scope_id": SCOPE, "entries": [{"kind": "note", "text": t} for t in TEXTS]}
        assert client.post("/v1/memory/remember", json=body).status_code == 200
        response = client.post(
            "/v1/memory/search",
            json={
                "scope_id": SCOPE,
                "query": "When is the deploy of version 2.4?",
                "limit": 2,
                "mode": "fts",
                "include_rerank": "redacted",
            },
        )
    assert response.status_code == 200, response.text
    payload = response.json()
    trace = payload["rerank"]
    assert trace["policy_id"] == "powercontext.memory.rerank.listwise.v1"
    assert payload["rerank_status"] == trace["rerank_status"]
    assert trace["rerank_status"] in ("applied", "fallback_no_valid_rank")
    assert 1 <= trace["candidate_count"] <= 4
    ranks = trace["selected_ranks"]
    assert 1 <= len(ranks) <= 2 and all(1 <= r <= trace["candidate_count"] for r in ranks)
    assert len(payload["hits"]) == len(ranks)
    assert {hit["text"] for hit in payload["hits"]} <= set(TEXTS)
    assert trace["discarded_rank_count"] == 0
    assert trace["usage"]["requests"] == 1
    assert trace["usage"]["input_tokens"] > 50 and trace["usage"]["output_tokens"] > 0
    assert trace["latency_ms"] > 0
