"""Provider faults through a whole reranked search, over the real `openai` provider path.

tests/integration/test_rerank_provider.py drives the reranker alone against the loopback fake;
here each fault goes through `open_runtime(...).search` and through the HTTP server: the
documented error (InferenceTimeoutError / InferenceUnavailableError /
InvalidInferenceOutputError, over HTTP 504 / 503 / 502) arrives within the timeout plus a
small margin, the provider's body never reaches the caller, and nothing is written: the head,
the change log and the entries are exactly what they were.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from powercontext import open_runtime
from powercontext.inference.pydantic_ai import PydanticAIListwiseReranker
from powercontext.memory import (
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
    MemoryHit,
    MemoryRerankDecision,
    RememberMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.runtime import Runtime
from powercontext.server import create_app
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    Scripted,
    error_reply,
    raw_reply,
    slow,
    tool_call,
)
from tests.http.live import live_server, with_reranker
from tests.integration.conftest import sqlite_settings

MARKER = "provider-said-SECRET-91d2"
TIMEOUT = 3.0
SHORT = 0.5
MARGIN = 0.75
TRUNCATED = b'{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"index": 0, "mes'

# name -> (scripted replies, timeout, domain error, HTTP status, HTTP code)
FAULTS: dict[str, tuple[list[Scripted] | None, float, type[Exception], int, str]] = {
    "timeout": ([slow(tool_call('{"ranks": [1]}'), 10.0)], SHORT, InferenceTimeoutError, 504,
                "inference_timeout"),
    "refused": (None, TIMEOUT, InferenceUnavailableError, 503, "inference_unavailable"),
    "429": ([error_reply(429, MARKER, **{"retry-after": "0"})], TIMEOUT,
            InferenceUnavailableError, 503, "inference_unavailable"),
    "500": ([error_reply(500, MARKER)], TIMEOUT, InferenceUnavailableError, 503,
            "inference_unavailable"),
    "truncated-json": ([tool_call('{"ranks": [1, 2'), tool_call('{"ranks": [1, 2')], TIMEOUT,
                       InvalidInferenceOutputError, 502, "inference_invalid_output"),
    "truncated-body": ([raw_reply(TRUNCATED, content_type="application/json")], TIMEOUT,
                       InvalidInferenceOutputError, 502, "inference_invalid_output"),
    "wrong-types": ([tool_call('{"ranks": ["1", true]}'), tool_call(f'{{"ranks": "{MARKER}"}}')],
                    TIMEOUT, InvalidInferenceOutputError, 502, "inference_invalid_output"),
}  # fmt: skip


CASES = list(FAULTS)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def openai_reranker(base_url: str, timeout: float) -> PydanticAIListwiseReranker:
    model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=base_url, api_key="k"))
    return PydanticAIListwiseReranker(model, timeout_seconds=timeout, max_requests=2)


def arm(fake: FakeOpenAIServer, name: str) -> PydanticAIListwiseReranker:
    replies, timeout, *_ = FAULTS[name]
    if replies is None:
        return openai_reranker(f"http://127.0.0.1:{closed_port()}/v1", timeout)
    fake.script_chat(*replies)
    return openai_reranker(fake.base_url, timeout)


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server
        assert server.unexpected == []


async def _state(runtime: Runtime) -> tuple[Any, ...]:
    memory = runtime.memory.for_scope("faults")
    return (
        await memory.head(),
        (await memory.changes()).changes,
        (await memory.list()).entries,
    )


@pytest.mark.parametrize("name", CASES)
async def test_a_fault_fails_the_search_closed_and_writes_nothing(
    fake: FakeOpenAIServer, tmp_path: Path, name: str
) -> None:
    _, timeout, error, _, _ = FAULTS[name]
    reranker = arm(fake, name)
    async with open_runtime(sqlite_settings(tmp_path / "m.db"), memory_reranker=reranker) as rt:
        memory = rt.memory.for_scope("faults")
        await memory.remember_many(
            [RememberMemoryRequest(text=f"adoption meeting note {i}") for i in range(12)]
        )
        before = await _state(rt)
        started = time.perf_counter()
        with pytest.raises(error) as caught:
            await memory.search(SearchMemoryRequest(query="adoption meeting", limit=3))
        elapsed = time.perf_counter() - started
        assert elapsed < timeout + MARGIN, f"{name} took {elapsed:.2f}s"
        assert await _state(rt) == before
    assert MARKER not in str(caught.value)
    assert len(fake.chat_requests) <= 2  # the request bound holds under faults too
    if name == "timeout":
        assert elapsed >= SHORT * 0.9


@dataclass
class Switchable:
    """Delegates to the reranker a test arms; each is a real openai-path reranker."""

    policy_id: str = "powercontext.memory.rerank.listwise.v1"
    current: Any = None

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        decision: MemoryRerankDecision = await self.current.rerank(query, candidates, limit)
        return decision


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Switchable]]:
    switch = Switchable()

    factory = with_reranker(switch)

    settings = sqlite_settings(tmp_path_factory.mktemp("faults") / "http.db")
    with live_server(create_app(settings, runtime_factory=factory)) as server:
        with httpx.Client(base_url=server.url) as client:
            client.post(
                "/v1/memory/remember",
                json={
                    "scope_id": "faults",
                    "entries": [{"text": f"adoption meeting note {i}"} for i in range(12)],
                },
            ).raise_for_status()
        yield server.url, switch


@pytest.mark.parametrize("name", CASES)
def test_a_fault_over_http_maps_to_its_status(
    fake: FakeOpenAIServer, served: tuple[str, Switchable], name: str
) -> None:
    url, switch = served
    _, timeout, _, status, code = FAULTS[name]
    switch.current = arm(fake, name)
    with httpx.Client(base_url=url, timeout=30) as client:
        head = client.post("/v1/memory/head", json={"scope_id": "faults"}).json()
        changes = client.post("/v1/memory/changes", json={"scope_id": "faults"}).json()
        started = time.perf_counter()
        response = client.post(
            "/v1/memory/search", json={"scope_id": "faults", "query": "adoption meeting"}
        )
        elapsed = time.perf_counter() - started
        assert client.post("/v1/memory/head", json={"scope_id": "faults"}).json() == head
        assert client.post("/v1/memory/changes", json={"scope_id": "faults"}).json() == changes
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    assert elapsed < timeout + MARGIN, f"{name} took {elapsed:.2f}s over HTTP"
    for leak in (MARKER, "adoption meeting note", "Traceback", "openai"):
        assert leak not in response.text
