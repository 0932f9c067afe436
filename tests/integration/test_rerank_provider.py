"""The real OpenAI-compatible provider path against a loopback fake server.

OpenAIChatModel + OpenAIProvider (openai SDK, its HTTP client, pydantic-ai's error mapping)
talk HTTP to tests.fakes.openai_server on 127.0.0.1: valid output, garbage, truncated or
mistyped JSON, HTTP 500 / 429, a refused connection and a reply slower than the timeout.
"""

from __future__ import annotations

import json
import socket
import time

import pytest
from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from powercontext.config import ServerSettings
from powercontext.inference.pydantic_ai import (
    PydanticAIEmbeddingModel,
    PydanticAIListwiseReranker,
    build_generation_reranker,
)
from powercontext.memory.errors import (
    ConfigurationError,
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
)
from powercontext.memory.models import MemoryHit, MemoryRef
from powercontext.memory.ports import EmbeddingModel
from powercontext.memory.rerank import OUTPUT_TOOL_NAME
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    embeddings_reply,
    error_reply,
    raw_reply,
    slow,
    text_reply,
    tool_call,
)

SECRET = "body-secret-c41e"
TIMEOUT = 5.0
"""Generous, for tests that must not time out on a loaded machine."""
SHORT_TIMEOUT = 0.5
"""For the tests that wait for the timeout."""
MARGIN = 0.75


def make_hit(index: int) -> MemoryHit:
    return MemoryHit(
        memory_ref=MemoryRef(scope_id="scope-int", revision=11),
        entry_id=f"entry-id-{index:03d}",
        entry_version_id=f"entry-version-{index:03d}",
        kind="fact",
        text=f"Session {index}: Caroline said the adoption meeting is on day {index}.",
        metadata={"origin": f"origin-{index}"},
        score=1.0 / (60 + index),
        matched_by=("fts", "vector"),
    )


POOL = tuple(make_hit(i) for i in range(1, 13))


def chat_reranker(
    server: FakeOpenAIServer, *, max_requests: int = 2, timeout: float = TIMEOUT
) -> PydanticAIListwiseReranker:
    model = OpenAIChatModel(
        "fake-model", provider=OpenAIProvider(base_url=server.base_url, api_key="dummy-key")
    )
    return PydanticAIListwiseReranker(model, timeout_seconds=timeout, max_requests=max_requests)


def message_text(request_body: dict[str, object]) -> str:
    return json.dumps(request_body["messages"], ensure_ascii=False)


async def test_valid_output_returns_the_raw_ranks_and_usage(server: FakeOpenAIServer) -> None:
    server.script_chat(tool_call('{"ranks": [3, 1, 3, 40]}', usage=(321, 9)))
    decision = await chat_reranker(server).rerank("When is the adoption meeting?", POOL, 5)

    assert decision.selected_ranks == (3, 1, 3, 40)
    assert decision.usage.requests == 1
    assert (decision.usage.input_tokens, decision.usage.output_tokens) == (321, 9)

    (request,) = server.chat_requests
    body = request.body
    assert body["temperature"] == 0
    assert body["model"] == "fake-model"
    assert [tool["function"]["name"] for tool in body["tools"]] == [OUTPUT_TOOL_NAME]
    assert request.headers["authorization"] == "Bearer dummy-key"
    sent = message_text(body)
    assert "When is the adoption meeting?" in sent
    for hit in POOL:
        assert json.dumps(hit.text)[1:-1] in sent
        for hidden in (hit.entry_id, hit.entry_version_id, hit.metadata["origin"], "scope-int"):
            assert hidden not in sent


async def test_retry_after_invalid_output_then_success(server: FakeOpenAIServer) -> None:
    server.script_chat(tool_call('{"ranks": ["2"]}'), tool_call('{"ranks": [2]}'))
    decision = await chat_reranker(server).rerank("q", POOL, 3)
    assert decision.selected_ranks == (2,)
    assert decision.usage.requests == 2
    assert len(server.chat_requests) == 2
    # The second request tells the model what was wrong with its first answer.
    assert "integer" in message_text(server.chat_requests[1].body).lower()


@pytest.mark.parametrize(
    "replies",
    [
        [text_reply("The answer is in candidate three."), text_reply("Candidate three.")],
        [tool_call('{"ranks": [1, 2'), tool_call('{"ranks": [1, 2')],
        [tool_call('{"ranks": ["one", "two"]}'), tool_call('{"ranks": [1.5]}')],
        [raw_reply(b"<html>garbage gateway page</html>")],
        [raw_reply(b'{"choices": "nope"}', content_type="application/json")],
    ],
    ids=["prose", "truncated-json", "wrong-types", "non-json-body", "malformed-completion"],
)
async def test_garbage_output_fails_closed(server: FakeOpenAIServer, replies: list[object]) -> None:
    server.script_chat(*replies)  # type: ignore[arg-type]
    started = time.perf_counter()
    with pytest.raises(InvalidInferenceOutputError):
        await chat_reranker(server).rerank("q", POOL, 3)
    assert time.perf_counter() - started < TIMEOUT + MARGIN
    assert 1 <= len(server.chat_requests) <= 2


@pytest.mark.parametrize(("status", "headers"), [(500, {}), (503, {}), (429, {"retry-after": "0"})])
async def test_http_errors_mean_unavailable_and_hide_the_body(
    server: FakeOpenAIServer, status: int, headers: dict[str, str]
) -> None:
    server.script_chat(error_reply(status, f"upstream exploded {SECRET}", **headers))
    started = time.perf_counter()
    with pytest.raises(InferenceUnavailableError) as caught:
        await chat_reranker(server).rerank("q", POOL, 3)
    assert time.perf_counter() - started < TIMEOUT + MARGIN
    assert str(status) in str(caught.value)
    assert SECRET not in str(caught.value)
    assert POOL[0].text not in str(caught.value)
    assert caught.value.__cause__ is not None
    # One attempt: the SDK's own retries are off, the request bound is the only bound.
    assert len(server.chat_requests) == 1


async def test_a_slow_reply_hits_the_timeout(server: FakeOpenAIServer) -> None:
    server.script_chat(slow(tool_call('{"ranks": [1]}'), delay=10.0))
    started = time.perf_counter()
    with pytest.raises(InferenceTimeoutError):
        await chat_reranker(server, timeout=SHORT_TIMEOUT).rerank("q", POOL, 3)
    elapsed = time.perf_counter() - started
    assert SHORT_TIMEOUT * 0.9 <= elapsed < SHORT_TIMEOUT + MARGIN


async def test_a_refused_connection_means_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel(
        "fake-model",
        provider=OpenAIProvider(base_url=f"http://127.0.0.1:{port}/v1", api_key="dummy"),
    )
    reranker = PydanticAIListwiseReranker(model, timeout_seconds=TIMEOUT, max_requests=2)
    started = time.perf_counter()
    with pytest.raises(InferenceUnavailableError):
        await reranker.rerank("q", POOL, 3)
    assert time.perf_counter() - started < TIMEOUT + MARGIN


async def test_the_settings_string_path(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy-from-env")
    settings = ServerSettings(
        inference={
            "generation_model": "openai-chat:fake-model",
            "generation_timeout_seconds": TIMEOUT,
            "generation_max_requests": 1,
        }
    )
    reranker = build_generation_reranker(settings)
    server.script_chat(tool_call('{"ranks": [2, 1]}'))
    decision = await reranker.rerank("q", POOL, 2)
    assert decision.selected_ranks == (2, 1)
    assert server.chat_requests[0].body["temperature"] == 0

    server.script_chat(text_reply("no tool call"))
    with pytest.raises(InvalidInferenceOutputError):
        await reranker.rerank("q", POOL, 2)
    assert len(server.chat_requests) == 2  # max_requests=1: no second attempt


# ---- embeddings -------------------------------------------------------------------------------


def fake_embedder(server: FakeOpenAIServer) -> OpenAIEmbeddingModel:
    return OpenAIEmbeddingModel(
        "fake-embed", provider=OpenAIProvider(base_url=server.base_url, api_key="dummy")
    )


def embedder(server: FakeOpenAIServer) -> PydanticAIEmbeddingModel:
    return PydanticAIEmbeddingModel(fake_embedder(server), dimension=8, timeout_seconds=TIMEOUT)


async def test_an_unknown_dimension_is_probed_once_then_enforced(
    server: FakeOpenAIServer,
) -> None:
    with pytest.raises(ConfigurationError, match="dimension"):
        PydanticAIEmbeddingModel(fake_embedder(server))
    server.script_embeddings(embeddings_reply(8), embeddings_reply(8), embeddings_reply(8))

    model = await PydanticAIEmbeddingModel.open(fake_embedder(server), timeout_seconds=TIMEOUT)
    assert isinstance(model, EmbeddingModel)
    assert (model.profile.profile_id, model.profile.dimension) == ("openai:fake-embed", 8)
    vectors = await model.embed_documents(["alpha", "beta gamma"])
    assert [len(vector) for vector in vectors] == [8, 8]
    assert vectors[0] != vectors[1]
    query = await model.embed_query("alpha")
    assert list(query) == list(vectors[0])

    requests = server.requests_to("/v1/embeddings")
    assert len(requests) == 3  # one probe, then one request per call
    assert [r.body["input"] for r in requests[1:]] == [["alpha", "beta gamma"], ["alpha"]]
    assert all(request.body["model"] == "fake-embed" for request in requests)


async def test_embeddings_reject_broken_output(server: FakeOpenAIServer) -> None:
    model = embedder(server)
    server.script_embeddings(embeddings_reply(6))
    with pytest.raises(InvalidInferenceOutputError, match="6-dimensional"):
        await model.embed_documents(["a"])
    server.script_embeddings(embeddings_reply(8, count=1))
    with pytest.raises(InvalidInferenceOutputError, match="1 vectors for 2 texts"):
        await model.embed_documents(["a", "b"])


async def test_embedding_errors_map_fail_closed(server: FakeOpenAIServer) -> None:
    model = embedder(server)
    # The SDK retries a 503 itself (honouring retry-after-ms); all attempts fail here.
    server.script_embeddings(*[error_reply(503, SECRET, **{"retry-after-ms": "1"})] * 3)
    with pytest.raises(InferenceUnavailableError) as caught:
        await model.embed_query("a")
    assert SECRET not in str(caught.value)

    server.script_embeddings(slow(embeddings_reply(8), delay=10.0))
    model = PydanticAIEmbeddingModel(
        fake_embedder(server), dimension=8, timeout_seconds=SHORT_TIMEOUT
    )
    started = time.perf_counter()
    with pytest.raises(InferenceTimeoutError):
        await model.embed_query("a")
    assert time.perf_counter() - started < SHORT_TIMEOUT + MARGIN


async def test_embedding_spec_string_uses_the_environment(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy-from-env")
    model = PydanticAIEmbeddingModel("openai:text-embedding-3-small", timeout_seconds=TIMEOUT)
    # A known model needs no probe request.
    assert model.profile.dimension == 1536
    assert model.profile.profile_id == "openai:text-embedding-3-small"
    server.script_embeddings(embeddings_reply(1536))
    (vector,) = await model.embed_documents(["hello"])
    assert len(vector) == 1536


def test_unusable_embedding_specs_are_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    for spec in ("no-provider-prefix", "openai:text-embedding-3-small", "ollama:nomic-embed-text"):
        with pytest.raises(
            ConfigurationError, match="POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL"
        ):
            PydanticAIEmbeddingModel(spec)
