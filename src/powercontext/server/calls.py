"""Performing one operation: who calls (the key's grant), what it may touch, and the runtime.

Every surface (HTTP v1, MCP, the inspector) authenticates its own way, then hands the grant
and the validated body to `Operation.perform` (server.operations), which checks the row's
scope rule before its handler runs. Handlers reach a scope's memory only through
`Call.memory`, which checks the grant again, so no handler can forget the check.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from powercontext.memory.scoped import ScopedMemory
from powercontext.runtime import Runtime
from powercontext.server.auth import KeyGrant
from powercontext.server.state import ServerState, state_of

ScopeRule = Literal["body", "key"]
"""`body`: the request names a `scope_id` the key must be allowed (403 before the handler
runs); `key`: the request names no scope, and the handler answers only what the key allows."""


@dataclass(frozen=True, slots=True)
class Call:
    """One call of an operation by one key."""

    grant: KeyGrant
    state: ServerState

    @property
    def runtime(self) -> Runtime:
        runtime = self.state.runtime
        assert runtime is not None, "the lifespan opens the runtime before serving"
        return runtime

    def memory(self, scope_id: str) -> ScopedMemory:
        """The caller's view of `scope_id`, refused (403) unless the key may use it."""
        self.grant.require(scope_id)
        return self.runtime.memory.for_scope(scope_id)


Handler = Callable[[Call, Any], Awaitable[BaseModel]]
"""`async def handler(call: Call, body: TheRequestModel) -> TheResponseModel`."""


bearer = HTTPBearer(
    auto_error=False,
    description="An API key; required when auth is enabled (always off by default on loopback).",
)


async def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> KeyGrant:
    token = credentials.credentials if credentials is not None else None
    return state_of(request).authority.authenticate(token)


Caller = Annotated[KeyGrant, Depends(caller)]
"""The HTTP caller's grant: a dependency resolved before the body is validated (401 first)."""


def _parameter(name: str, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation)


def declare_endpoint(endpoint: Any, name: str, body: Any | None) -> Any:
    """Give an endpoint generated from a row the signature FastAPI reads: the request, the
    caller's grant (authenticated first) and, unless None, the body as `body`'s model(s)."""
    parameters = [_parameter("request", Request), _parameter("grant", Caller)]
    if body is not None:
        parameters.append(_parameter("body", Annotated[body, Body()]))
    endpoint.__signature__ = inspect.Signature(parameters)
    endpoint.__name__ = name
    return endpoint
