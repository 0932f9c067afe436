"""Helpers (no tests) of the tests/http/test_direct_calls_*.py differential tests.

The same request is sent twice: with the direct layer on, then with it off (every call goes
through FastAPI's router, as before the layer existed). The live server runs in this process,
so turning the layer off is a patch of `DirectJsonCalls._target` between two requests.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from powercontext.server import direct

COMPARED_HEADERS = (
    "content-type",
    "content-length",
    "www-authenticate",
    "x-content-type-options",
    "allow",
    "location",
    "connection",
)

Answer = tuple[int, dict[str, str | None], Any]


def answer_of(status: int, headers: Callable[[str], str | None], text: str) -> Answer:
    try:
        body: Any = httpx.Response(200, content=text.encode()).json()
    except ValueError:
        body = text
    return status, {name: headers(name) for name in COMPARED_HEADERS}, body


def answer(response: httpx.Response) -> Answer:
    return answer_of(response.status_code, response.headers.get, response.text)


class Switch:
    """Turns the direct layer off for a block, and records which calls took it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.taken: list[bool] = []
        original = direct._well_formed

        async def recorded(*args: Any) -> Any:
            ready = await original(*args)
            self.taken.append(ready is not None)
            return ready

        monkeypatch.setattr(direct, "_well_formed", recorded)

    @contextmanager
    def routed(self) -> Iterator[None]:
        with self.monkeypatch.context() as patch:
            patch.setattr(direct.DirectJsonCalls, "_target", lambda self, scope: None)
            yield

    def both(self, send: Callable[[], Answer]) -> tuple[Answer, Answer, bool]:
        """(direct-on answer, router answer, whether the first took the direct way)."""
        self.taken.clear()
        first = send()
        went_direct = True in self.taken
        with self.routed():
            second = send()
        return first, second, went_direct


def raw_exchange(url: str, head: bytes, body: bytes, *, expect_continue: bool = False) -> Answer:
    """One HTTP/1.1 exchange on a socket (`Connection: close`), for what httpx will not send:
    `Expect: 100-continue` waited for properly. `head` ends with the blank line."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head)
        if expect_continue:
            interim = _read_until(sock, b"\r\n\r\n")
            assert interim.startswith(b"HTTP/1.1 100"), interim
        sock.sendall(body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    raw_head, _, payload = data.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields.setdefault(name.strip().lower(), value.strip())
    return answer_of(status, fields.get, payload.decode("utf-8", "replace"))


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(1)
        if not chunk:
            break
        data += chunk
    return data
