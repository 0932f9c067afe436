"""What every surface of the server shares, set on `app.state.powercontext` by the lifespan."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from starlette.requests import Request

from powercontext.runtime import Runtime
from powercontext.server.auth import ApiKeyAuthority
from powercontext.server.metrics import ServerMetrics
from powercontext.server.readiness import ReadinessProbe


@dataclass
class ServerState:
    """What the routes and tools need; `runtime` and `readiness` exist while the app serves."""

    authority: ApiKeyAuthority
    metrics: ServerMetrics
    runtime: Runtime | None = None
    readiness: ReadinessProbe | None = None
    stream_writes: asyncio.Semaphore = field(
        default_factory=lambda: asyncio.Semaphore(STREAM_WRITES)
    )
    """Held by a /v1/memory/remember/stream call from before its body is read to its commit."""


STREAM_WRITES = 2
"""Streamed batch writes one process holds at once: each keeps its whole batch in memory
(parsed entries take several times their JSON bytes), so a third waits, unread."""


def state_of(request: Request) -> ServerState:
    state = request.app.state.powercontext
    assert isinstance(state, ServerState)
    return state
