"""The endpoint reranker against a real loopback `POST /rerank` server, end to end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from powercontext import open_runtime
from powercontext.inference.rerank_endpoint import EndpointReranker, parse_scores
from powercontext.memory import (
    ConfigurationError,
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
    RememberMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.rerank.scored import POLICY_ID
from powercontext.runtime import build_reranker
from powercontext.testing import FakeRerankEndpoint
from tests.integration.conftest import sqlite_settings

API_KEY = "rerank-key-never-logged-91c2"


@pytest.fixture
def endpoint() -> Iterator[FakeRerankEndpoint]:
    with FakeRerankEndpoint() as fake:
        yield fake


TEXTS = [
    "the billing service deploys on fridays",
    "lunch menu for the team offsite",
    "billing invoices are sent monthly",
    "the search service rebuilds nightly",
    "billing service outage postmortem",
]


def _settings(db: Path, url: str, **runtime: object) -> Any:
    return sqlite_settings(
        db,
        memory_rerank_enabled=True,
        memory_rerank_provider="endpoint",
        memory_rerank_endpoint_url=url,
        memory_rerank_endpoint_api_key=API_KEY,
        memory_rerank_endpoint_model="fake-reranker",
        **runtime,
    )


async def _search(db: Path, url: str, query: str, limit: int = 3, **runtime: object) -> Any:
    async with open_runtime(_settings(db, url, **runtime)) as rt:
        assert rt.memory_reranker is not None and rt.memory_reranker.policy_id == POLICY_ID
        memory = rt.memory.for_scope("p")
        await memory.remember_many([RememberMemoryRequest(text=t) for t in TEXTS])
        return await memory.search(SearchMemoryRequest(query=query, limit=limit, mode="fts"))


async def test_selects_by_score_and_sends_the_common_request(
    db_path: Path, endpoint: FakeRerankEndpoint
) -> None:
    page = await _search(db_path, endpoint.url, "billing service deploys", limit=2)
    trace = page.rerank
    assert trace is not None and page.rerank_status == "applied"
    assert [h.text for h in page.hits] == [TEXTS[0], TEXTS[4]]
    assert page.hits == tuple(trace.candidate_hits[r - 1] for r in trace.selected_ranks)
    assert trace.usage.requests == 1 and trace.usage.documents == len(trace.candidate_hits)
    assert trace.usage.input_tokens is None
    headers, body = endpoint.requests[-1]
    assert headers["Authorization"] == f"Bearer {API_KEY}"
    assert body["model"] == "fake-reranker" and body["top_n"] == 2
    assert body["query"] == "billing service deploys"
    assert body["documents"] == [h.text for h in trace.candidate_hits]


async def test_threshold_gives_a_sparse_selection(
    db_path: Path, endpoint: FakeRerankEndpoint
) -> None:
    page = await _search(
        db_path,
        endpoint.url,
        "billing service deploys",
        limit=5,
        memory_rerank_endpoint_threshold=0.9,
    )
    assert [h.text for h in page.hits] == [TEXTS[0]]  # only full overlap reaches 0.9


async def test_top_k_caps_the_selection(db_path: Path, endpoint: FakeRerankEndpoint) -> None:
    page = await _search(db_path, endpoint.url, "billing", limit=5, memory_rerank_endpoint_top_k=2)
    assert len(page.hits) == 2 and endpoint.requests[-1][1]["top_n"] == 2


async def test_tei_shape_and_texts_field(db_path: Path, endpoint: FakeRerankEndpoint) -> None:
    endpoint.mode = "tei"
    page = await _search(
        db_path,
        endpoint.url,
        "billing service deploys",
        limit=2,
        memory_rerank_endpoint_documents_field="texts",
    )
    assert [h.text for h in page.hits] == [TEXTS[0], TEXTS[4]]
    body = endpoint.requests[-1][1]
    assert "texts" in body and "documents" not in body and "top_n" not in body


async def test_wrong_indexes_are_discarded_and_traced(
    db_path: Path, endpoint: FakeRerankEndpoint
) -> None:
    endpoint.mode = "wrong-index"
    page = await _search(db_path, endpoint.url, "billing", limit=3)
    trace = page.rerank
    assert trace is not None and trace.selected_ranks == (2,)
    assert sorted(trace.discarded_ranks) == [-2, 2, 100]


@pytest.mark.parametrize(
    ("mode", "error", "fragment"),
    [
        ("429", InferenceUnavailableError, "HTTP 429"),
        ("500", InferenceUnavailableError, "HTTP 500"),
        ("garbage", InvalidInferenceOutputError, "integer index"),
        ("not-json", InvalidInferenceOutputError, "decoded"),
    ],
)
async def test_failures_map_to_fail_closed_errors(
    db_path: Path, endpoint: FakeRerankEndpoint, mode: str, error: type[Exception], fragment: str
) -> None:
    endpoint.mode = mode
    with pytest.raises(error, match=fragment) as raised:
        await _search(db_path, endpoint.url, "billing")
    assert "billing" not in str(raised.value) and API_KEY not in str(raised.value)


async def test_slow_endpoint_times_out_or_degrades(
    db_path: Path, endpoint: FakeRerankEndpoint
) -> None:
    endpoint.mode, endpoint.delay = "slow", 3.0
    started = time.perf_counter()
    with pytest.raises(InferenceTimeoutError):
        await _search(db_path, endpoint.url, "billing", memory_rerank_timeout_seconds=0.3)
    assert time.perf_counter() - started < 2.5
    page = await _search(
        db_path.with_name("other.db"),
        endpoint.url,
        "billing",
        memory_rerank_timeout_seconds=0.3,
        memory_rerank_failure_policy="fail_open",
    )
    assert page.rerank_status == "degraded_provider_error" and len(page.hits) == 3


async def test_unreachable_endpoint_is_unavailable(db_path: Path) -> None:
    with pytest.raises(InferenceUnavailableError, match="unavailable"):
        await _search(db_path, "http://127.0.0.1:9/rerank", "billing")


def test_configuration_is_checked_and_the_key_is_secret() -> None:
    with pytest.raises(ConfigurationError, match="MEMORY_RERANK_ENDPOINT_URL"):
        build_reranker(
            sqlite_settings(
                Path("x.db"), memory_rerank_enabled=True, memory_rerank_provider="endpoint"
            )
        )
    settings = _settings(Path("x.db"), "http://127.0.0.1:1/rerank")
    assert API_KEY not in repr(settings) and API_KEY not in str(settings.model_dump())
    reranker = build_reranker(settings)
    assert isinstance(reranker, EndpointReranker) and API_KEY not in repr(reranker)


@pytest.mark.parametrize(
    "payload",
    [
        {"results": [{"index": True, "relevance_score": 1.0}]},
        {"results": [{"index": 0, "relevance_score": float("nan")}]},
        {"results": "nope"},
        [1, 2],
        {"data": []},
    ],
)
def test_parse_scores_refuses_garbage(payload: object) -> None:
    with pytest.raises(InvalidInferenceOutputError):
        parse_scores(payload)


def test_parse_scores_accepts_both_shapes() -> None:
    cohere = parse_scores({"results": [{"index": 1, "relevance_score": 0.5}]})
    tei = parse_scores([{"index": 1, "score": 0.5}])
    assert cohere == tei and cohere[0].index == 1


async def test_empty_pool_makes_no_request(endpoint: FakeRerankEndpoint) -> None:
    reranker = EndpointReranker(endpoint.url)
    decision = await reranker.rerank("q", (), 3)
    await reranker.aclose()
    assert decision.selected_ranks == () and endpoint.requests == []
