"""The request of an entry's history (the inspector's /ui/api/history and the MCP tool)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from powercontext.memory.models import ScopeId
from powercontext.server.schemas import MAX_ID_CHARS


class HistoryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scope_id: ScopeId
    entry_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
