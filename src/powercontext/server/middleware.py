"""The outermost ASGI layer: request id, header gate, body limit and deadline, access log,
metrics, last 500.

Pure ASGI (no BaseHTTPMiddleware): it wraps `send` once and buffers the body once, which
keeps the per-request overhead small. It runs inside Starlette's ServerErrorMiddleware, so it
catches whatever escaped the exception handlers and still answers with the error envelope and
the request id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Sequence
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from powercontext.config import BODY_READ_TIMEOUT_SECONDS
from powercontext.server.errors import envelope
from powercontext.server.gate import BodyLimit, RequestGate, body_limit
from powercontext.server.metrics import ServerMetrics

access_log = logging.getLogger("powercontext.http.access")
log = logging.getLogger("powercontext.http")

REQUEST_ID_HEADER = "x-request-id"
# A client's id is echoed only when it is short and plain, so it cannot inject headers or logs.
_CLIENT_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
UNMATCHED_ROUTE = "unmatched"
# Every response: a browser must never sniff a JSON answer (or an error) into HTML or script.
_NOSNIFF = (b"x-content-type-options", b"nosniff")
CLIENT_CLOSED = 499
"""The status logged and counted for a client that left mid-request (no answer is sent)."""


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def request_id_of(scope: Scope) -> str:
    sent = _header(scope, REQUEST_ID_HEADER.encode())
    if sent is not None and _CLIENT_ID.fullmatch(sent):
        return sent
    return uuid.uuid4().hex


def route_of(scope: Scope, routes: Sequence[BaseRoute] = ()) -> str:
    """The route template of a request, for logs and metrics. A request answered before
    routing (refused by the gate, a body over the limit) has none in its scope: it is matched
    against `routes` by path, so a dashboard still counts a 401 or 413 per route; a path no
    route has stays `unmatched` (never the raw path: ids would make a series each)."""
    path = getattr(scope.get("route"), "path", None)
    if isinstance(path, str):
        return path
    for route in routes:
        found = getattr(route, "path", None)
        if isinstance(found, str) and route.matches(scope)[0] is not Match.NONE:
            return found
    return UNMATCHED_ROUTE


class _TooLarge(Exception):
    def __init__(self, limit: BodyLimit) -> None:
        super().__init__(limit.setting)
        self.limit = limit


class _SlowBody(Exception):
    pass


class RequestContextMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: ServerMetrics,
        max_body_bytes: int,
        max_write_body_bytes: int | None = None,
        gate: RequestGate | None = None,
        streaming_paths: frozenset[str] = frozenset(),
        body_read_timeout_seconds: float = BODY_READ_TIMEOUT_SECONDS,
        routes: Sequence[BaseRoute] = (),
    ) -> None:
        self.app = app
        self.routes = routes
        # Their routes read the body as a stream and bound it themselves (e.g. per line).
        self.streaming_paths = streaming_paths
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes
        self.max_write_body_bytes = max_write_body_bytes or max_body_bytes
        self.gate = gate
        self.body_read_timeout_seconds = body_read_timeout_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = request_id_of(scope)
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500
        response_started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = int(message["status"])
                own = (b"x-request-id", _NOSNIFF[0])
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in own]
                headers += [(b"x-request-id", request_id.encode("latin-1")), _NOSNIFF]
                message = {**message, "headers": headers}
            await send(message)

        try:
            refusal = self.gate.refuse(scope) if self.gate is not None else None
            if refusal is not None:
                # Decided from the headers: the body (possibly huge) is never read.
                status = refusal.status
                await _send_error(send_with_id, status, refusal.payload, refusal.headers)
                return
            if (
                scope.get("method") in _BODY_METHODS
                and scope.get("path") not in self.streaming_paths
            ):
                body = await self._read_body(scope, receive)
                receive = replay_body(body, receive)
            await self.app(scope, receive, send_with_id)
        except _TooLarge as exc:
            status = 413
            split = (
                "; send a larger batch as JSON lines to /v1/memory/remember/stream "
                "(the SDK's remember_many does)"
                if exc.limit.setting.endswith("WRITE_BODY_BYTES")
                else ""
            )
            message = f"the request body exceeds {exc.limit.max_bytes} bytes ({exc.limit.setting})"
            await _send_error(
                send_with_id,
                413,
                envelope("payload_too_large", message + split, {"max_bytes": exc.limit.max_bytes}),
            )
        except _SlowBody:
            # uvicorn bounds only idle keep-alive connections: a body that stops arriving
            # would hold this task and its buffer for good. The connection is not reusable
            # (the rest of the body may still come), so it is closed after the answer.
            status = 408
            waited = f"{self.body_read_timeout_seconds:g}"
            await _send_error(
                send_with_id,
                408,
                envelope(
                    "bad_request",
                    f"the request body did not arrive within {waited} s "
                    "(POWERCONTEXT_SERVER_HTTP_BODY_READ_TIMEOUT_SECONDS)",
                ),
                ((b"connection", b"close"),),
            )
        except ClientDisconnect:
            # The client left mid-body: nothing was committed and no one reads an answer.
            status = CLIENT_CLOSED
            log.info(
                "client disconnected before its request was read",
                extra={"request_id": request_id},
            )
        except Exception:
            log.exception("unhandled error", extra={"request_id": request_id})
            if not response_started:
                await _send_error(
                    send_with_id, 500, envelope("internal_error", "internal server error")
                )
        finally:
            seconds = time.perf_counter() - started
            route = route_of(scope, self.routes)
            method = str(scope.get("method", ""))
            self.metrics.observe_request(route, method, status, seconds)
            access_log.info(
                "%s %s %d %.1fms",
                method,
                route,
                status,
                seconds * 1000.0,
                extra={
                    "request_id": request_id,
                    "method": method,
                    "route": route,
                    "status": status,
                    "latency_ms": round(seconds * 1000.0, 3),
                },
            )

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = body_limit(
            str(scope.get("path", "")),
            max_body_bytes=self.max_body_bytes,
            max_write_body_bytes=self.max_write_body_bytes,
        )
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit.max_bytes:
            raise _TooLarge(limit)  # decided from the header: not one body byte is read
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.body_read_timeout_seconds):  # the whole body
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        # Not a short body to hand on: the route would parse a truncated one.
                        raise ClientDisconnect
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit.max_bytes:
                        raise _TooLarge(limit)  # chunked: enforced while streaming
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            raise _SlowBody from None
        return b"".join(chunks)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """`receive` that hands on `body` once (read already), then the connection's messages."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _send_error(
    send: Send,
    status: int,
    payload: dict[str, Any],
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
