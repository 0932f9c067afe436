"""The calls in flight on a MemoryService, so that closing a runtime is orderly.

Without it, closing the store under a running write made the caller see a StorageError for a
revision that was committed (the read-back after the commit found the store closed), and a
caller retrying that write would write it twice. A closing runtime now refuses new calls with
one clear message, waits for the calls in flight, and only then closes the store.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from contextvars import ContextVar, Token
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from powercontext.memory.errors import StorageError

log = logging.getLogger("powercontext.runtime")

CLOSE_DRAIN_SECONDS = 60.0
"""How long closing waits for calls in flight: more than a write's CAS retries (30 s) and a
default search deadline, so that only a call that is stuck is left behind."""
CLOSED_MESSAGE = (
    "the runtime is closed (its `async with open_runtime(...)` block has ended); "
    "open a new one to use this Memory again"
)

_inside: ContextVar[bool] = ContextVar("powercontext_inside_call", default=False)
"""True within a call: a call made by another (a write that reads its citation) is part of
it, and must not be refused when the runtime starts closing halfway through."""


class CallGate:
    """Counts calls in flight; `close` refuses new ones and waits for those in flight."""

    def __init__(self) -> None:
        self.closed = False
        self._active = 0
        self._idle: asyncio.Event | None = None

    @property
    def active(self) -> int:
        """Calls in flight now (nested calls count once)."""
        return self._active

    def enter(self) -> Token[bool] | None:
        """Start one call (None for a call made inside another); StorageError when closed."""
        if _inside.get():
            return None
        if self.closed:
            raise StorageError(CLOSED_MESSAGE)
        self._active += 1
        return _inside.set(True)

    def leave(self, token: Token[bool] | None) -> None:
        """End the call `enter` started."""
        if token is None:
            return
        _inside.reset(token)
        self._active -= 1
        if self._active == 0 and self._idle is not None:
            self._idle.set()

    @asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        """One call: StorageError when the runtime is closed or closing."""
        token = self.enter()
        try:
            yield
        finally:
            self.leave(token)

    def refuse(self) -> None:
        """Refuse new calls from now on (those in flight go on)."""
        self.closed = True

    async def close(self, timeout_seconds: float = CLOSE_DRAIN_SECONDS) -> None:
        """Refuse new calls, then wait up to `timeout_seconds` for those in flight."""
        self.refuse()
        if self._active == 0:
            return
        self._idle = asyncio.Event()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_seconds)
        except TimeoutError:
            log.warning(
                "runtime closing with %d calls still in flight after %.0f s",
                self._active,
                timeout_seconds,
            )


class _Gated(Protocol):
    calls: CallGate


S = TypeVar("S", bound=_Gated)
P = ParamSpec("P")
R = TypeVar("R")


def gated(
    method: Callable[Concatenate[S, P], Awaitable[R]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """A method of a service with a `calls` gate, run as one call through it."""

    @functools.wraps(method)
    async def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        # enter/leave, not `call()`: a search pays for this on every request.
        gate = self.calls
        token = gate.enter()
        try:
            return await method(self, *args, **kwargs)
        finally:
            gate.leave(token)

    return run
