"""What a server (HTTP or MCP over stdio) logs at startup about its search capability.

A plain install without the `[local]` extra searches full text only; without this line a new
user would only find that out from `/v1/ready` or a 422. An embedder that loads files (the
local MiniLM) is also loaded in the background right away: its files are verified by sha256
then, so a broken install is one error line at startup, not a surprise at the first search
(which it also spares the load).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from powercontext.memory.errors import failure_summary
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


async def load_embedder(runtime: Runtime) -> None:
    """Load (and verify) an embedder that has files to load; log one line if it cannot."""
    embedder = runtime.embedding_model
    warm_up = getattr(embedder, "warm_up", None)
    if embedder is None or warm_up is None:
        return
    try:
        await warm_up()
    except Exception as exc:  # the server still serves full text; say why vectors will fail
        log.error(
            "the embedding model %s cannot be used (%s): vector and hybrid search fail, and "
            "auto searches full text only, until it is fixed",
            embedder.profile.profile_id,
            failure_summary(exc),
        )


@contextlib.asynccontextmanager
async def announced_capability(runtime: Runtime) -> AsyncIterator[None]:
    """Log the capability, and load the embedder in the background while the server runs."""
    log_search_capability(runtime)
    loading = asyncio.create_task(load_embedder(runtime), name="powercontext-load-embedder")
    try:
        yield
    finally:
        loading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loading
