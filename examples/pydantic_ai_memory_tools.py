"""PowerContext memory as pydantic-ai tools, over the SDK.

An agent gets two tools bound to one scope: `remember` writes an entry, `search_memory` returns
the final hits with their citations. Start a server (`powercontext server run`), then:

    from pydantic_ai import Agent
    from examples.pydantic_ai_memory_tools import memory_toolset

    agent = Agent("openai:gpt-4.1-mini", toolsets=[memory_toolset("project")])
    print(agent.run_sync("Remember that we deploy on Tuesdays. When do we deploy?").output)

Lives outside the package on purpose: inside `src/`, only `powercontext.inference.pydantic_ai`
imports pydantic-ai. tests/http/test_integrations.py runs it against a live server.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.toolsets import FunctionToolset

from powercontext.client import PowerContextClient
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest


def memory_toolset(
    scope_id: str, *, server_url: str | None = None, api_key: str | None = None
) -> FunctionToolset[Any]:
    """Tools over the scope `scope_id`; server_url and api_key default to POWERCONTEXT_CLIENT_*."""

    def client() -> PowerContextClient:
        return PowerContextClient(server_url, api_key=api_key)

    async def remember(text: str, kind: str = "fact") -> dict[str, Any]:
        """Remember one fact, decision or event for later. Returns the new revision."""
        async with client() as sdk:
            written = await sdk.memory.for_scope(scope_id).remember(
                RememberMemoryRequest(kind=kind, text=text)
            )
        return {"revision": written.memory_ref.revision}

    async def search_memory(query: str, limit: int = 5) -> list[dict[str, Any]]:
        """Search memory; returns the best entries first, each with its citation."""
        async with client() as sdk:
            page = await sdk.memory.for_scope(scope_id).search(
                SearchMemoryRequest(query=query, limit=limit)
            )
        return [
            {
                "text": hit.text,
                "kind": hit.kind,
                "citation": f"{hit.memory_ref.revision}:{hit.entry_id}:{hit.entry_version_id}",
            }
            for hit in page.hits
        ]

    return FunctionToolset([remember, search_memory])
