"""The scopes list: the request (no arguments) and the response (GET /v1/scopes, MCP)."""

from __future__ import annotations

from pydantic import Field

from powercontext.server.schemas import MemoryRefModel, _Wire


class ScopeSummaryModel(_Wire):
    scope_id: str = Field(description="The scope.")
    memory_ref: MemoryRefModel = Field(description="Its head revision.")
    entry_count: int = Field(ge=0, description="Entries active at the head.")


class ScopesResponse(_Wire):
    scopes: list[ScopeSummaryModel] = Field(
        description="Every scope with at least one revision that the key may use, by scope_id."
    )


class ListScopesRequest(_Wire):
    """No arguments: the key alone decides which scopes are listed."""
