"""What a request may do, decided from its headers alone, before any body byte is read.

Two rules, applied to every route (HTTP v1, /ui/api and /mcp alike):

- DNS rebinding: a loopback server is reachable by any web page the user opens, under any
  name that page's DNS points at 127.0.0.1. Such a server answers only when `Host` names the
  loopback interface and `Origin`, when sent, is a loopback page.
- Authentication: a protected route with a missing or unknown bearer key is refused with 401
  before its body is read, so an anonymous client cannot make the server buffer and parse
  megabytes (the scope check still happens in the route, which knows the body's scope_id).

It also says how large a body may be (`body_limit`) and how long a streamed one may stall
(`arriving`). Parsing JSON holds the GIL, so a large
body a key holder sends stalls every other request for as long as it parses, on the event loop
or in a thread alike. Write routes, the only ones whose bodies grow with the caller's data,
get a small limit of their own (HTTP_MAX_WRITE_BODY_BYTES, 1 MiB by default): the SDK splits
larger batches into several requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.types import Scope

from powercontext.server.auth import ApiKeyAuthority, is_loopback
from powercontext.server.errors import UnauthorizedError, envelope

PROTECTED_PREFIXES = ("/v1/memory/", "/v1/scopes", "/ui/api/", "/mcp")
"""Routes that need a key when auth is enabled; health, readiness, metrics and docs do not."""

_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    payload: dict[str, Any]
    headers: tuple[tuple[bytes, bytes], ...] = ()


WRITE_BODY_PATHS = frozenset({"/v1/memory/remember", "/mcp"})
"""Bodies that carry entries: remember (one or a batch) and MCP, whose only large call is
remember_batch (every other tool's body is a query or a few ids)."""


@dataclass(frozen=True, slots=True)
class BodyLimit:
    max_bytes: int
    setting: str
    """The environment variable that sets it, named in the 413."""


def body_limit(path: str, *, max_body_bytes: int, max_write_body_bytes: int) -> BodyLimit:
    """The body limit of `path`: the write limit on write routes (never above the general one)."""
    general = BodyLimit(max_body_bytes, "POWERCONTEXT_SERVER_HTTP_MAX_BODY_BYTES")
    if path.rstrip("/") in WRITE_BODY_PATHS and max_write_body_bytes < max_body_bytes:
        return BodyLimit(max_write_body_bytes, "POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES")
    return general


def _headers(scope: Scope) -> dict[str, str]:
    """Each header's first value, as the routes read it (Starlette's `Headers.get`): the gate
    must judge the same Authorization the route then uses."""
    headers: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return headers


def _hostname(host_header: str) -> str | None:
    """The name of a `Host` value (port and IPv6 brackets removed); None when malformed."""
    try:
        return urlsplit(f"//{host_header.strip()}").hostname
    except ValueError:
        return None


def loopback_host(host_header: str | None) -> bool:
    return host_header is not None and _hostname(host_header) in _LOOPBACK_NAMES


def loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin.strip())
        name = parts.hostname
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and name in _LOOPBACK_NAMES


def bearer_token(headers: dict[str, str]) -> str | None:
    """The credentials of an `Authorization: Bearer <key>` header, else None."""
    scheme, _, credentials = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


class RequestGate:
    def __init__(self, authority: ApiKeyAuthority, *, bind_host: str) -> None:
        self.authority = authority
        # The rebinding rule is for loopback binds only: a public bind is reached under its
        # own names, and it requires keys unless the operator opted out explicitly.
        self.loopback_only = is_loopback(bind_host)

    def refuse(self, scope: Scope) -> Refusal | None:
        """Why `scope` must not be served, or None when it may go on to its route."""
        headers = _headers(scope)
        if self.loopback_only:
            if not loopback_host(headers.get("host")):
                return Refusal(
                    403,
                    envelope(
                        "forbidden",
                        "this loopback server answers only Host: 127.0.0.1, "
                        "localhost or [::1] (DNS rebinding protection)",
                    ),
                )
            origin = headers.get("origin")
            if origin is not None and not loopback_origin(origin):
                return Refusal(
                    403,
                    envelope(
                        "forbidden",
                        "cross-origin requests from non-loopback pages are "
                        "refused (DNS rebinding protection)",
                    ),
                )
        path = str(scope.get("path", ""))
        if self.authority.enabled and path.startswith(PROTECTED_PREFIXES):
            try:
                self.authority.authenticate(bearer_token(headers))
            except UnauthorizedError as exc:
                return Refusal(
                    401, envelope("unauthorized", str(exc)), ((b"www-authenticate", b"Bearer"),)
                )
        return None


async def arriving(chunks: AsyncIterator[bytes], seconds: float) -> AsyncIterator[bytes]:
    """A streamed body's chunks, each awaited at most `seconds` (HTTP_BODY_READ_TIMEOUT_SECONDS):
    a 408 and a closed connection beyond. Per chunk, not for the whole body, since a large
    import may take longer than that to arrive and still be moving; a stalled one would hold
    its route (and the stream-write slot) for good."""
    iterator = aiter(chunks)
    while True:
        try:
            async with asyncio.timeout(seconds):
                chunk = await anext(iterator)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise HTTPException(
                408,
                f"the request body stalled: no byte for {seconds:g} s "
                "(POWERCONTEXT_SERVER_HTTP_BODY_READ_TIMEOUT_SECONDS)",
                headers={"Connection": "close"},
            ) from None
        yield chunk
