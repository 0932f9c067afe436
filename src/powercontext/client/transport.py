"""Sending a `Call` over httpx, with bounded retries of idempotent calls.

Only an idempotent call (reads, and writes that carry an idempotency key, which the SDK adds
by default) is retried, and only after a 503 or a connection failure, with exponential backoff
(a server's Retry-After is honoured up to the cap). A keyed write that committed before the
failure is answered with its original result, so the retry never writes it twice.

A batch write's timeout grows with its size (`SECONDS_PER_ENTRY`): a large `remember_many`
that embeds every entry must not time out on the client while the server is still working.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from powercontext.client.errors import (
    connection_failed,
    error_from_http,
    names_no_route,
    unexpected_answer,
)
from powercontext.client.wire import Call

T = TypeVar("T")
NDJSON = "application/x-ndjson"
_RETRY_STATUS = 503
SECONDS_PER_ENTRY = 0.02
"""Extra read/write timeout per entry of a batch, on top of the client's timeout."""


def scaled_timeout(base: httpx.Timeout, entries: int) -> httpx.Timeout:
    """`base` for one entry; each further entry adds SECONDS_PER_ENTRY to read and write."""
    extra = SECONDS_PER_ENTRY * max(entries - 1, 0)

    def grow(value: float | None) -> float | None:
        return None if value is None else value + extra

    return httpx.Timeout(
        connect=base.connect, read=grow(base.read), write=grow(base.write), pool=base.pool
    )


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    backoff: float = 0.2
    backoff_max: float = 5.0

    def delays(self) -> Iterator[float]:
        for attempt in range(self.max_retries):
            yield min(self.backoff * (2**attempt), self.backoff_max)

    def delay_for(self, response: httpx.Response | None, default: float) -> float:
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after is not None and retry_after.isdigit():
            return min(float(retry_after), self.backoff_max)
        return default


def _result(call: Call[T], response: httpx.Response) -> T:
    if not (response.is_success or (call.accept_unavailable and response.status_code == 503)):
        error = error_from_http(response)
        # A wrong path in the server URL is a 404 too: `get` must not read it as "no entry".
        if call.none_on_not_found and error.code == "not_found" and not names_no_route(error):
            return None  # type: ignore[return-value]  # Call[X | None] by construction
        raise error
    try:
        payload: Any = response.json()
    except ValueError:
        raise unexpected_answer(response, "not JSON") from None
    try:
        return call.parse(payload)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        # pydantic's ValidationError is a ValueError; the others come from the search parser.
        raise unexpected_answer(response, f"{type(exc).__name__}: {exc}") from exc


def _delay_after_failure(
    call: Call[T], delays: Iterator[float], exc: httpx.TransportError
) -> float:
    """How long to wait before retrying a call the connection failed under; raises when the
    call is not idempotent or the retries are spent."""
    delay = next(delays, None) if call.idempotent else None
    if delay is None:
        raise connection_failed(exc) from exc
    return delay


def _delay_before_retry(
    policy: RetryPolicy, call: Call[T], response: httpx.Response, delays: Iterator[float]
) -> float | None:
    """How long to wait before retrying an idempotent call answered 503; None: answer now."""
    if call.idempotent and response.status_code == _RETRY_STATUS:
        delay = next(delays, None)
        if delay is not None:
            return policy.delay_for(response, delay)
    return None


def _payload(call: Call[T]) -> dict[str, Any]:
    """httpx's arguments for the call's body: JSON, or JSON lines with a query."""
    if call.lines is None:
        return {"json": call.body, "params": call.query}
    return {"content": call.lines, "params": call.query, "headers": {"content-type": NDJSON}}


class AsyncTransport:
    def __init__(self, http: httpx.AsyncClient, policy: RetryPolicy) -> None:
        self.http = http
        self.policy = policy

    async def run(self, call: Call[T]) -> T:
        delays = self.policy.delays()
        timeout = scaled_timeout(self.http.timeout, call.entries)
        while True:
            try:
                response = await self.http.request(
                    call.method, call.path, timeout=timeout, **_payload(call)
                )
            except httpx.TransportError as exc:
                await asyncio.sleep(_delay_after_failure(call, delays, exc))
                continue
            if (delay := _delay_before_retry(self.policy, call, response, delays)) is None:
                return _result(call, response)
            await asyncio.sleep(delay)


class SyncTransport:
    def __init__(self, http: httpx.Client, policy: RetryPolicy) -> None:
        self.http = http
        self.policy = policy

    def run(self, call: Call[T]) -> T:
        delays = self.policy.delays()
        timeout = scaled_timeout(self.http.timeout, call.entries)
        while True:
            try:
                response = self.http.request(
                    call.method, call.path, timeout=timeout, **_payload(call)
                )
            except httpx.TransportError as exc:
                time.sleep(_delay_after_failure(call, delays, exc))
                continue
            if (delay := _delay_before_retry(self.policy, call, response, delays)) is None:
                return _result(call, response)
            time.sleep(delay)
