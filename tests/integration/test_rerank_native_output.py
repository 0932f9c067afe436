"""The JSON-schema (native) output path of the listwise reranker, over a loopback fake server.

What llama.cpp, Ollama and vLLM turn into a grammar: `response_format: json_schema` with ranks
bounded to the pool and at most `limit` of them, and a completion-token bound. The real server
is exercised in test_llamacpp_rerank.py; this pins the request and the settings path without
needing the [llm] extra.
"""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.config import InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.inference.pydantic_ai import (
    PydanticAIListwiseReranker,
    build_generation_reranker,
    openai_compatible_model,
)
from powercontext.memory.errors import InvalidInferenceOutputError
from powercontext.memory.rerank import OUTPUT_TOOL_NAME
from tests.fakes.openai_server import FakeOpenAIServer, text_reply, tool_call
from tests.integration.test_rerank_provider import POOL, TIMEOUT


def native_reranker(server: FakeOpenAIServer) -> PydanticAIListwiseReranker:
    model = openai_compatible_model(server.base_url, "local-model", api_key="local-key")
    return PydanticAIListwiseReranker(
        model, timeout_seconds=TIMEOUT, max_requests=2, output_mode="native"
    )


def rank_schema(body: dict[str, Any]) -> dict[str, Any]:
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == OUTPUT_TOOL_NAME
    schema: dict[str, Any] = response_format["json_schema"]["schema"]
    ranks: dict[str, Any] = schema["properties"]["ranks"]
    return ranks


async def test_the_request_bounds_ranks_and_tokens_by_schema(server: FakeOpenAIServer) -> None:
    server.script_chat(text_reply('{"ranks": [3, 1]}', usage=(400, 9)))
    decision = await native_reranker(server).rerank("When is the meeting?", POOL, 4)

    assert decision.selected_ranks == (3, 1)
    assert (decision.usage.requests, decision.usage.input_tokens) == (1, 400)
    (request,) = server.chat_requests
    body = request.body
    assert "tools" not in body
    ranks = rank_schema(body)
    assert ranks["maxItems"] == 4
    assert ranks["items"] == {"type": "integer", "minimum": 1, "maximum": len(POOL)}
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 32 + 12 * 4
    assert body["temperature"] == 0
    assert request.headers["authorization"] == "Bearer local-key"


async def test_the_schema_follows_each_pool_and_limit(server: FakeOpenAIServer) -> None:
    server.script_chat(text_reply('{"ranks": [2]}'), text_reply('{"ranks": []}'))
    reranker = native_reranker(server)
    await reranker.rerank("q", POOL[:5], 2)
    await reranker.rerank("q", POOL, 7)
    first, second = (rank_schema(r.body) for r in server.chat_requests)
    assert (first["maxItems"], first["items"]["maximum"]) == (2, 5)
    assert (second["maxItems"], second["items"]["maximum"]) == (7, len(POOL))


async def test_out_of_schema_ranks_from_a_lax_server_are_left_to_normalization(
    server: FakeOpenAIServer,
) -> None:
    # A server that ignores the schema: the raw ranks still reach the Memory service, which
    # discards and traces them like any reranker's output, rather than failing the search.
    server.script_chat(text_reply('{"ranks": [40, 2, 2, 1, 5]}'))
    decision = await native_reranker(server).rerank("q", POOL, 2)
    assert decision.selected_ranks == (40, 2, 2, 1, 5)


async def test_output_that_is_not_the_schema_fails_closed(server: FakeOpenAIServer) -> None:
    server.script_chat(text_reply("Candidate three."), text_reply('{"ranks": ["3"]}'))
    with pytest.raises(InvalidInferenceOutputError):
        await native_reranker(server).rerank("q", POOL, 3)
    assert len(server.chat_requests) == 2


def compatible_settings(server: FakeOpenAIServer, **inference: object) -> ServerSettings:
    values: dict[str, object] = {
        "generation_model": "openai-compatible:qwen2.5:1.5b",
        "generation_base_url": server.base_url,
        "generation_api_key": "ollama-key",
        "generation_timeout_seconds": TIMEOUT,
    }
    return ServerSettings(
        inference=InferenceConfig.model_validate(values | inference),
        runtime=RuntimeConfig(memory_rerank_enabled=True),
    )


async def test_the_base_url_settings_use_native_output_by_default(
    server: FakeOpenAIServer,
) -> None:
    server.script_chat(text_reply('{"ranks": [1]}'))
    reranker = build_generation_reranker(compatible_settings(server))
    assert reranker.output_mode == "native"
    decision = await reranker.rerank("q", POOL, 3)
    assert decision.selected_ranks == (1,)
    (request,) = server.chat_requests
    assert request.body["model"] == "qwen2.5:1.5b"
    assert request.headers["authorization"] == "Bearer ollama-key"
    rank_schema(request.body)


async def test_tool_output_can_be_chosen_for_a_base_url(server: FakeOpenAIServer) -> None:
    server.script_chat(tool_call('{"ranks": [2]}'))
    settings = compatible_settings(server, generation_output_mode="tool")
    reranker = build_generation_reranker(settings)
    assert (await reranker.rerank("q", POOL, 3)).selected_ranks == (2,)
    (request,) = server.chat_requests
    assert [tool["function"]["name"] for tool in request.body["tools"]] == [OUTPUT_TOOL_NAME]
    assert "response_format" not in request.body
