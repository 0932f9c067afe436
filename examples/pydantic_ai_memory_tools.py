"""PowerContext memory as pydantic-ai tools, over the SDK.

An agent gets two tools bound to one scope: `remember` writes an entry, `search_memory` returns
the final hits with their citations. Start a server (`powercontext server run`), then:

    from pydantic_ai import Agent
    from examples.pydantic_ai_memory_tools import memory_toolset

    agent = Agent("openai:gpt-4.1-mini", toolsets=[memory_toolset("project")])
    print(agent.run_sync("Remember that we deploy on Tuesdays. When do we deploy?").output)

or from the shell, `python examples/pydantic_ai_memory_tools.py [MODEL] [SCOPE]`.

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


def main(argv: list[str]) -> int:
    """`python examples/pydantic_ai_memory_tools.py [MODEL] [SCOPE]`: one question, two tools."""
    import sys

    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UserError

    from powercontext.memory.errors import PowerContextError

    model = argv[0] if argv else "openai:gpt-4.1-mini"
    scope_id = argv[1] if len(argv) > 1 else "project"
    question = "Remember that we deploy on Tuesdays, then tell me when we deploy."
    try:
        agent = Agent(model, toolsets=[memory_toolset(scope_id)])
        print(agent.run_sync(question).output)
    except UserError as exc:  # no provider key, an unknown model: pydantic-ai says which
        print(f"error: the model {model!r} cannot be used: {exc}", file=sys.stderr)
        return 2
    except PowerContextError as exc:  # the server did not answer, or refused the key
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
