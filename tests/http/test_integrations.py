"""The framework integrations against a live server: the LangChain retriever
(powercontext.integrations.langchain) and the pydantic-ai tool example (examples/)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from examples.pydantic_ai_memory_tools import memory_toolset
from pydantic import SecretStr
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from powercontext.client import SyncPowerContextClient, UnauthorizedError
from powercontext.integrations.langchain import PowerContextRetriever
from powercontext.memory.models import MemoryCitation, RememberMemoryRequest
from tests.http.conftest import KEY_A, Served


def _seed(served: Served, scope: str, texts: list[str], key: str | None = None) -> None:
    with SyncPowerContextClient(served.url, api_key=key) as client:
        memory = client.memory.for_scope(scope)
        for text in texts:
            memory.remember(RememberMemoryRequest(text=text, metadata={"source": "standup"}))


def test_langchain_retriever_returns_the_final_hits_as_documents(
    open_server: Served, fresh_scope: str
) -> None:
    word = f"kestrel{uuid.uuid4().hex[:6]}"
    _seed(open_server, fresh_scope, [f"the {word} hovers", f"a {word} nests", "unrelated note"])
    retriever = PowerContextRetriever(
        scope_id=fresh_scope, server_url=open_server.url, limit=5, mode="fts"
    )
    docs = retriever.invoke(word)
    assert sorted(d.page_content for d in docs) == [f"a {word} nests", f"the {word} hovers"]
    first = docs[0]
    assert first.id == first.metadata["entry_version_id"]
    assert first.metadata["metadata"] == {"source": "standup"}
    assert first.metadata["scope_id"] == fresh_scope and "fts" in first.metadata["matched_by"]
    # The citation in the metadata reads back exactly that version.
    with SyncPowerContextClient(open_server.url) as client:
        entry = client.memory.for_scope(fresh_scope).get(
            MemoryCitation.model_validate(first.metadata["citation"])
        )
    assert entry is not None and entry.text == first.page_content


async def test_langchain_retriever_async_and_with_a_key(auth_server: Served) -> None:
    word = f"plover{uuid.uuid4().hex[:6]}"
    _seed(auth_server, "scope-a", [f"the {word} runs"], key=KEY_A)
    retriever = PowerContextRetriever(
        scope_id="scope-a", server_url=auth_server.url, api_key=SecretStr(KEY_A), mode="fts"
    )
    docs = await retriever.ainvoke(word)
    assert [d.page_content for d in docs] == [f"the {word} runs"]
    refused = PowerContextRetriever(scope_id="scope-a", server_url=auth_server.url)
    with pytest.raises(UnauthorizedError):
        await refused.ainvoke(word)


def _scripted_model(word: str) -> FunctionModel:
    """A model that calls remember, then search_memory, then answers with what it found."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            part
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        assert {tool.name for tool in info.function_tools} == {"remember", "search_memory"}
        if not returns:
            args = {"text": f"We deploy the {word} service on Tuesdays.", "kind": "decision"}
            return ModelResponse(parts=[ToolCallPart("remember", args)])
        if len(returns) == 1:
            return ModelResponse(parts=[ToolCallPart("search_memory", {"query": word})])
        hits = returns[-1].content
        return ModelResponse(parts=[TextPart(json.dumps(hits))])

    return FunctionModel(respond)


async def test_pydantic_ai_tools_remember_and_search_through_the_sdk(
    open_server: Served, fresh_scope: str
) -> None:
    word = f"osprey{uuid.uuid4().hex[:6]}"
    agent = Agent(
        _scripted_model(word),
        toolsets=[memory_toolset(fresh_scope, server_url=open_server.url)],
    )
    result = await agent.run("Remember when we deploy, then look it up.")
    hits: list[dict[str, Any]] = json.loads(result.output)
    assert [hit["text"] for hit in hits] == [f"We deploy the {word} service on Tuesdays."]
    assert hits[0]["kind"] == "decision"
    # The tool's citation resolves on the server: the write really went through the SDK.
    revision, entry_id, version_id = hits[0]["citation"].split(":")
    with SyncPowerContextClient(open_server.url) as client:
        entry = client.memory.for_scope(fresh_scope).get(
            MemoryCitation.model_validate(
                {
                    "memory_ref": {"scope_id": fresh_scope, "revision": int(revision)},
                    "entry_id": entry_id,
                    "entry_version_id": version_id,
                }
            )
        )
    assert entry is not None and entry.kind == "decision"
