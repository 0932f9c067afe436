"""A body that stops arriving is answered 408 after POWERCONTEXT_SERVER_HTTP_BODY_READ_TIMEOUT_
SECONDS and its connection closed: uvicorn bounds only idle keep-alive connections, so a client
that declared 1000 bytes and sent 10 held its request, task and buffer for good."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from powercontext.config import DatabaseConfig, HttpConfig, InferenceConfig, ServerSettings
from powercontext.server import create_app
from powercontext.server.metrics import ServerMetrics
from powercontext.server.middleware import RequestContextMiddleware
from tests.http.live import LiveServer, live_server

TIMEOUT = 0.3


def _exchange(url: str, path: str, declared: int, sent: bytes, pause: float = 0.0) -> bytes:
    """Declare `declared` body bytes, send `sent` (after `pause` s, the rest of it after
    another), keep the socket open, and read until the server closes it (or 5 s pass)."""
    parts = urlsplit(url)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=5.0) as sock:
        half = len(sent) // 2 if pause else len(sent)
        sock.sendall(head.encode("latin-1") + sent[:half])
        if pause:
            time.sleep(pause)
            sock.sendall(sent[half:])
        received = b""
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                return received + b"<closed>"
            received += chunk
            if not pause and declared == len(sent) and b"\r\n\r\n" in received:
                return received  # a complete request: keep-alive, nothing more comes
        return received


def _body(answer: bytes) -> dict[str, object]:
    body = answer.partition(b"\r\n\r\n")[2]
    parsed: dict[str, object] = json.loads(body.removesuffix(b"<closed>"))
    return parsed


@pytest.fixture(scope="module")
def echo_server() -> Iterator[LiveServer]:
    """The middleware around a route that answers the size of the body it was handed."""

    async def echo(request: Request) -> JSONResponse:
        return JSONResponse({"bytes": len(await request.body())})

    app = RequestContextMiddleware(
        Starlette(routes=[Route("/echo", echo, methods=["POST"])]),
        metrics=ServerMetrics(),
        max_body_bytes=4096,
        body_read_timeout_seconds=TIMEOUT,
    )
    with live_server(app) as server:  # type: ignore[arg-type]
        yield server


def test_a_stalled_body_gets_408_and_the_connection_is_closed(echo_server: LiveServer) -> None:
    started = time.monotonic()
    answer = _exchange(echo_server.url, "/echo", 1000, b'{"a": "12"}')
    elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert TIMEOUT <= elapsed < 3.0
    assert b"connection: close" in answer.lower()
    assert answer.endswith(b"<closed>")  # the server closed the socket: nothing is held
    error = _body(answer)["error"]
    assert isinstance(error, dict)
    assert error["code"] == "bad_request"
    assert "POWERCONTEXT_SERVER_HTTP_BODY_READ_TIMEOUT_SECONDS" in error["message"]


def test_a_body_that_arrives_in_time_is_served(echo_server: LiveServer) -> None:
    body = b'{"text": "' + b"x" * 500 + b'"}'
    answer = _exchange(echo_server.url, "/echo", len(body), body, pause=TIMEOUT / 3)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert _body(answer) == {"bytes": len(body)}


def test_the_server_applies_the_setting(tmp_path: Path) -> None:
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'm.db'}"),
        inference=InferenceConfig(embedding_model="none"),
        http=HttpConfig(body_read_timeout_seconds=TIMEOUT),
    )
    with live_server(create_app(settings)) as server:
        answer = _exchange(server.url, "/v1/memory/search", 1000, b'{"scope_id"')
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert answer.endswith(b"<closed>")


def test_the_setting_is_read_from_the_environment_and_must_be_positive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert HttpConfig().body_read_timeout_seconds == 30.0
    monkeypatch.setenv("POWERCONTEXT_SERVER_HTTP_BODY_READ_TIMEOUT_SECONDS", "2.5")
    assert ServerSettings().http.body_read_timeout_seconds == 2.5
    with pytest.raises(ValidationError):
        HttpConfig(body_read_timeout_seconds=0)


async def test_a_client_gone_mid_body_never_reaches_the_route() -> None:
    """A disconnect before the body ended used to hand the route the truncated body."""
    handed: list[bytes] = []

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        handed.append((await receive())["body"])

    messages: list[Message] = [
        {"type": "http.request", "body": b'{"text": "x"}', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return messages.pop(0)

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    app = RequestContextMiddleware(route, metrics=ServerMetrics(), max_body_bytes=4096)
    scope: Scope = {"type": "http", "method": "POST", "path": "/echo", "headers": []}
    await app(scope, receive, send)
    assert handed == [] and sent == []


@pytest.mark.parametrize(
    "path",
    ["/v1/memory/remember/stream?scope_id=s", "/v1/memory/import?scope_id=s"],
)
def test_a_streamed_body_that_stalls_gets_408_and_frees_its_route(
    tmp_path: Path, path: str
) -> None:
    """The JSON-lines routes read their own body, chunk by chunk: each chunk is awaited at most
    the setting, so a stalled upload cannot hold the stream-write slot (two per process)."""
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'm.db'}"),
        inference=InferenceConfig(embedding_model="none"),
        http=HttpConfig(body_read_timeout_seconds=TIMEOUT),
    )
    line = b'{"text": "one"}\n'
    with live_server(create_app(settings)) as server:
        for _ in range(3):  # more stalls than there are slots: each one is released
            started = time.monotonic()
            answer = _exchange(server.url, path, 1000, line[:9])  # half a line, then nothing
            assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
            assert time.monotonic() - started < 3.0
            assert answer.endswith(b"<closed>")
            error = _body(answer)["error"]
            assert isinstance(error, dict)
            assert "POWERCONTEXT_SERVER_HTTP_BODY_READ_TIMEOUT_SECONDS" in error["message"]
        if "remember" in path:
            whole = _exchange(server.url, path, len(line), line)
            assert whole.startswith(b"HTTP/1.1 200"), whole[:300]
