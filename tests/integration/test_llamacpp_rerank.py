"""Reranked search against a real model: SmolLM2-135M in llama.cpp's in-process server.

The trace is checked (ranks resolved to the pool's own hits, usage, latency, the server's life),
never the ranking's quality: a 135M model checks the wiring, nothing more (docs/locomo.md).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from powercontext import Runtime, ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, RuntimeConfig
from powercontext.inference.llamacpp import LlamaCppServer, model_path
from powercontext.inference.pydantic_ai import PydanticAIListwiseReranker
from powercontext.memory.errors import ConfigurationError
from powercontext.memory.models import MemorySearchPage, RememberMemoryRequest, SearchMemoryRequest
from tests.local_model import SMOLLM2_SPEC, requires_local_model, smollm2_inference

pytestmark = requires_local_model

TEXTS = [
    "Bob lives in Lyon now; he moved there in May and rents a flat.",
    "Alice drinks green tea every morning before work.",
    "Bob's sister does not live in Lyon but visited him there.",
    "The office printer on the third floor is broken again.",
    "Carol adopted a grey cat named Pepper.",
]
QUERY = "Where does Bob live in Lyon?"
CANDIDATES = 4
LIMIT = 2


def _settings(db: Path, **inference: object) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=smollm2_inference(**inference),
        runtime=RuntimeConfig(memory_rerank_enabled=True, memory_rerank_candidate_limit=CANDIDATES),
    )


async def _reranked_search(runtime: Runtime) -> MemorySearchPage:
    memory = runtime.memory.for_scope("local-model")
    for text in TEXTS:
        await memory.remember(RememberMemoryRequest(kind="note", text=text))
    return await memory.search(SearchMemoryRequest(query=QUERY, limit=LIMIT, mode="fts"))


def assert_real_rerank_trace(page: MemorySearchPage) -> None:
    trace = page.rerank
    assert trace is not None
    assert trace.policy_id == "powercontext.memory.rerank.listwise.v1"
    pool = trace.candidate_hits
    assert 1 <= len(pool) <= CANDIDATES
    # Ranks resolved: every final hit is the pool's own hit at the selected rank, in order.
    assert 1 <= len(trace.selected_ranks) <= LIMIT
    assert all(1 <= rank <= len(pool) for rank in trace.selected_ranks)
    assert page.hits == tuple(pool[rank - 1] for rank in trace.selected_ranks)
    # The JSON-schema grammar keeps every rank in range, so nothing needs discarding.
    assert trace.discarded_ranks == ()
    assert trace.rerank_status in ("applied", "fallback_no_valid_rank")
    assert trace.used_fallback == (trace.rerank_status == "fallback_no_valid_rank")
    # Usage as llama.cpp reports it: one request, real token counts.
    assert trace.usage.requests == 1
    assert trace.usage.input_tokens is not None and trace.usage.input_tokens > 50
    assert trace.usage.output_tokens is not None and trace.usage.output_tokens > 0
    assert trace.latency_ms > 0


def _health(address: str) -> int | None:
    try:
        return httpx.get(f"{address}/health", timeout=2.0).status_code
    except httpx.HTTPError:
        return None


async def test_reranked_search_through_the_runtime_starts_and_stops_llamacpp(
    tmp_path: Path,
) -> None:
    async with open_runtime(_settings(tmp_path / "m.db")) as runtime:
        reranker = runtime.memory_reranker
        assert isinstance(reranker, PydanticAIListwiseReranker)
        assert reranker.output_mode == "native"
        address = reranker.model.base_url.removesuffix("/").removesuffix("/v1")
        assert address.startswith("http://127.0.0.1:")
        assert _health(address) == 200
        page = await _reranked_search(runtime)
    assert_real_rerank_trace(page)
    assert _health(address) is None, "the runtime left its llama.cpp server running"


async def test_openai_compatible_base_url_against_the_in_process_server(tmp_path: Path) -> None:
    # The documented example (docs/rerank.md): any OpenAI-compatible server by base URL. Here it
    # is llama.cpp's, started by the test; the runtime must use it and leave it running.
    server = LlamaCppServer.start(model_path(SMOLLM2_SPEC), threads=2, context_size=2048)
    try:
        settings = _settings(
            tmp_path / "m.db",
            generation_model="openai-compatible:smollm2",
            generation_base_url=server.base_url,
        )
        async with open_runtime(settings) as runtime:
            reranker = runtime.memory_reranker
            assert isinstance(reranker, PydanticAIListwiseReranker)
            assert reranker.model.base_url.rstrip("/") == server.base_url
            page = await _reranked_search(runtime)
        assert_real_rerank_trace(page)
        assert _health(server.address) == 200, "the runtime stopped a server it does not own"
    finally:
        server.close()
    assert _health(server.address) is None
    server.close()  # idempotent


async def test_a_file_that_is_not_a_model_fails_with_one_configuration_line(
    tmp_path: Path,
) -> None:
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"GGUF but not really" * 64)
    with pytest.raises(ConfigurationError) as caught:
        async with open_runtime(_settings(tmp_path / "m.db", generation_model=f"llamacpp:{bogus}")):
            pass
    message = str(caught.value)
    assert "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL" in message and "\n" not in message
