"""A prompt too long for the generation model's context names the settings that fix it.

Found by the rerank conformance audit: llama.cpp started with a small
`POWERCONTEXT_SERVER_INFERENCE_LLAMACPP_CONTEXT_SIZE` answers a 30-candidate listwise prompt
with HTTP 400 `exceed_context_size_error`, which reached the caller only as "the provider
answered HTTP 400", with nothing saying that the context was too small. The loopback fake
OpenAI-compatible server sends the error bodies llama.cpp and OpenAI send, so the provider SDK
and pydantic-ai's error mapping run for real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.inference.pydantic_ai import PydanticAIListwiseReranker, openai_compatible_model
from powercontext.memory import InferenceUnavailableError, RememberMemoryRequest
from powercontext.memory import SearchMemoryRequest as Search
from tests.fakes.openai_server import FakeOpenAIServer, Reply, error_reply
from tests.integration.conftest import sqlite_settings

# Planted in every error body: the message may quote numbers, never the provider's text.
MARKER = "memory-text-7c1e"


def _error(payload: dict[str, object], status: int = 400) -> Reply:
    return Reply(status=status, body=json.dumps({"error": payload}).encode())


LLAMACPP_OVERFLOW = _error(
    {
        "code": 400,
        "message": f"request (1226 tokens) exceeds the available context size {MARKER}",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 1226,
        "n_ctx": 256,
    }
)
OPENAI_OVERFLOW = _error(
    {
        "message": f"This model's maximum context length is 8192 tokens {MARKER}",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
)


async def _search_error(tmp_path: Path, server: FakeOpenAIServer) -> InferenceUnavailableError:
    model = openai_compatible_model(server.base_url, "smollm2", name="llamacpp")
    reranker = PydanticAIListwiseReranker(
        model, timeout_seconds=5.0, max_requests=2, output_mode="native"
    )
    async with open_runtime(
        sqlite_settings(tmp_path / "ctx.db"), memory_reranker=reranker
    ) as runtime:
        memory = runtime.memory.for_scope("ctx")
        await memory.remember_many(
            [RememberMemoryRequest(kind="note", text=f"deploy note {i}") for i in range(5)]
        )
        with pytest.raises(InferenceUnavailableError) as caught:
            await memory.search(Search(query="deploy", limit=3))
    return caught.value


@pytest.mark.parametrize(
    ("reply", "numbers"),
    [(LLAMACPP_OVERFLOW, ("1226", "256")), (OPENAI_OVERFLOW, ())],
    ids=["llamacpp", "openai"],
)
async def test_a_context_overflow_names_the_context_and_the_settings(
    tmp_path: Path, server: FakeOpenAIServer, reply: Reply, numbers: tuple[str, ...]
) -> None:
    server.script_chat(reply)
    error = await _search_error(tmp_path, server)
    message = str(error)
    assert "context" in message and "HTTP 400" in message
    assert "POWERCONTEXT_SERVER_INFERENCE_LLAMACPP_CONTEXT_SIZE" in message
    assert "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMIT" in message
    assert "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_MAX_CANDIDATE_CHARS" in message
    assert all(number in message for number in numbers)
    assert MARKER not in message
    # Not retried: the same prompt cannot fit on a second try.
    assert len(server.chat_requests) == 1


async def test_other_rejections_keep_the_plain_status_message(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    server.script_chat(error_reply(400, f"bad request {MARKER}"))
    message = str(await _search_error(tmp_path, server))
    assert message == (
        "memory rerank failed: the provider answered HTTP 400 (ModelRequestRejectedError)"
    )
