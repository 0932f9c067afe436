"""What every surface of the server shares, set on `app.state.powercontext` by the lifespan."""

from __future__ import annotations

from dataclasses import dataclass

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


def state_of(request: Request) -> ServerState:
    state = request.app.state.powercontext
    assert isinstance(state, ServerState)
    return state
