"""What a server (HTTP or MCP over stdio) logs at startup about its search capability.

A plain install without the `[local]` extra searches full text only; without this line a new
user would only find that out from `/v1/ready` or a 422.
"""

from __future__ import annotations

import logging

from powercontext.memory.search.modes import HYBRID_SEARCH_HINT
from powercontext.runtime import Runtime

log = logging.getLogger("powercontext.startup")


def search_capability(runtime: Runtime) -> str:
    embedder = runtime.embedding_model
    if embedder is None:
        return f"no embedding model: search is full text only; {HYBRID_SEARCH_HINT}"
    profile = embedder.profile
    return (
        f"embedding model {profile.profile_id} ({profile.dimension} dimensions): "
        "full-text, vector and hybrid search"
    )


def log_search_capability(runtime: Runtime) -> None:
    log.info(search_capability(runtime))
