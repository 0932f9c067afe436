"""The SDK against answers a PowerContext server never gives: a proxy's HTML pages, bodies of
another shape, slow answers; and what it resends when it retries. A scripted ASGI server on
loopback stands in for the proxy, so every request it got can be inspected."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from powercontext.client import (
    ApiNotFoundError,
    ApiPayloadTooLargeError,
    ClientSettings,
    ConnectionFailedError,
    ForbiddenError,
    PowerContextClient,
    ServerError,
    SyncPowerContextClient,
    UnauthorizedError,
)
from powercontext.memory import (
    ForgetMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.models import MemoryCitation, MemoryRef
from tests.http.conftest import Served
from tests.http.live import live_server

HTML = "text/html; charset=utf-8"
CITATION = MemoryCitation(
    memory_ref=MemoryRef(scope_id="p", revision=1), entry_id="e", entry_version_id="v"
)


@dataclass
class Script:
    """What the fake answers (every request alike) and what it received."""

    status: int = 502
    body: bytes = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
    content_type: str = HTML
    delay: float = 0.0
    received: list[tuple[str, str, bytes]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.received.append((scope["method"], scope["path"], body))
        await asyncio.sleep(self.delay)
        headers = [(b"content-type", self.content_type.encode())]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


@dataclass
class Router:
    """The module's one server, answering with the current test's script."""

    script: Script = field(default_factory=Script)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.script(scope, receive, send)


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[str, Router]]:
    router = Router()
    with live_server(router) as server:  # type: ignore[arg-type]  # any ASGI app serves
        yield server.url, router


@pytest.fixture
def proxy(fake: tuple[str, Router]) -> tuple[str, Script]:
    url, router = fake
    router.script = Script()
    return url, router.script


def _client(url: str, retries: int = 0, timeout: float = 5.0) -> SyncPowerContextClient:
    settings = ClientSettings(server_url=url, retry_backoff=0.01, max_retries=retries)
    return SyncPowerContextClient(settings=settings, timeout=timeout)


@pytest.mark.parametrize(
    ("status", "cls", "code"),
    [
        (502, ServerError, "internal_error"),
        (404, ServerError, "internal_error"),
        (401, UnauthorizedError, "unauthorized"),
        (403, ForbiddenError, "forbidden"),
        (413, ApiPayloadTooLargeError, "payload_too_large"),
    ],
)
def test_a_proxys_html_error_is_a_typed_sdk_error(
    proxy: tuple[str, Script], status: int, cls: type[Exception], code: str
) -> None:
    url, script = proxy
    script.status = status
    with _client(url) as client, pytest.raises(cls) as raised:
        client.memory.for_scope("p").remember(RememberMemoryRequest(text="x"))
    assert raised.value.status_code == status and raised.value.code == code  # type: ignore[attr-defined]
    assert "text/html" in str(raised.value) and "proxy" in str(raised.value)


def test_a_proxys_404_page_is_not_read_as_a_missing_entry(proxy: tuple[str, Script]) -> None:
    url, script = proxy
    script.status = 404
    with _client(url) as client, pytest.raises(ServerError):
        client.memory.for_scope("p").get(CITATION)


def test_a_wrong_path_in_the_server_url_is_not_a_missing_entry(
    open_server: Served, fresh_scope: str
) -> None:
    """The server's 404 for an unknown route has the code of a missing entry: `get` answered
    None for every citation when the URL had a stray path."""
    with SyncPowerContextClient(open_server.url) as right:
        written = right.memory.for_scope(fresh_scope).remember(RememberMemoryRequest(text="x"))
    citation = written.entries[0].citation
    with _client(f"{open_server.url}/api") as wrong, pytest.raises(ApiNotFoundError) as raised:
        wrong.memory.for_scope(fresh_scope).get(citation)
    assert "no route POST /api/v1/memory/entries/get" in str(raised.value)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"<html>ok</html>", HTML), (b"{}", "application/json"), (b"[1]", "application/json")],
)
def test_a_success_of_another_shape_is_a_server_error(
    proxy: tuple[str, Script], body: bytes, content_type: str
) -> None:
    url, script = proxy
    script.status, script.body, script.content_type = 200, body, content_type
    with _client(url) as client:
        memory = client.memory.for_scope("p")
        calls = [
            lambda: memory.search(SearchMemoryRequest(query="q")),
            lambda: memory.remember(RememberMemoryRequest(text="x")),
            lambda: client.memory.scopes(),
            lambda: client.health(),
            lambda: memory.import_lines(['{"format": "x"}\n']),
        ]
        for call in calls:
            with pytest.raises(ServerError, match="not what this SDK expects"):
                call()


def test_a_timeout_is_a_connection_error_after_bounded_retries(proxy: tuple[str, Script]) -> None:
    url, script = proxy
    script.status, script.body, script.delay = 200, b"{}", 1.0
    with _client(url, retries=1, timeout=0.2) as client, pytest.raises(ConnectionFailedError):
        client.memory.for_scope("p").head()
    assert len(script.received) == 2


async def test_async_client_raises_the_same_errors(proxy: tuple[str, Script]) -> None:
    url, script = proxy
    async with PowerContextClient(url, max_retries=0) as client:
        memory = client.memory.for_scope("p")
        with pytest.raises(ServerError, match="text/html"):
            await memory.search(SearchMemoryRequest(query="q"))
        with pytest.raises(ServerError, match="text/html"):
            [line async for line in memory.export_lines()]
        script.status, script.body = 200, b"{}"
        with pytest.raises(ServerError, match="not what this SDK expects"):
            await memory.import_lines(['{"format": "x"}\n'])


def test_retried_writes_resend_one_key_and_imports_are_sent_once(
    proxy: tuple[str, Script],
) -> None:
    url, script = proxy
    script.status = 503
    with _client(url, retries=2) as client:
        memory = client.memory.for_scope("p")
        writes = [
            lambda: memory.remember(RememberMemoryRequest(text="x")),
            lambda: memory.remember_many([RememberMemoryRequest(text="x")] * 2),
            lambda: memory.retire(RetireMemoryRequest(citation=CITATION)),
            lambda: memory.forget("e"),
        ]
        for write in writes:
            script.received.clear()
            with pytest.raises(ServerError):
                write()
            bodies = [json.loads(body) for _, _, body in script.received]
            assert len(bodies) == 3 and bodies[0]["idempotency_key"]
            assert bodies[1:] == bodies[:1] * 2  # the same key each time: one write at most
        script.received.clear()
        with pytest.raises(ServerError):
            memory.import_lines(['{"format": "x"}\n'])
        assert len(script.received) == 1  # not keyed: never resent


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.remember({"text": "x"}), "remember takes a RememberMemoryRequest, not dict"),
        (lambda m: m.remember_many("abc"), "remember_many takes a list of Remember"),
        (lambda m: m.remember_many(RememberMemoryRequest(text="x")), "list of Remember"),
        (lambda m: m.remember_many([{"text": "x"}]), "not dict"),
        (lambda m: m.search("deploy"), "search takes a SearchMemoryRequest, not str"),
        (lambda m: m.search_batch(["deploy"]), "search_batch takes a SearchMemoryRequest"),
        (lambda m: m.get("1:e:v"), "get takes a MemoryCitation, not str"),
        (lambda m: m.retire(CITATION), "retire takes a RetireMemoryRequest"),
        (lambda m: m.forget(["e"]), "forget takes a ForgetMemoryRequest or str, not list"),
        (lambda m: m.forget_scope(ForgetMemoryRequest(entry_ids=("e",))), "ForgetScopeRequest"),
        (lambda m: m.list(where={"kinds": ["fact"]}), "list takes a MemoryFilter, not dict"),
    ],
)
def test_a_wrong_argument_type_is_a_clear_type_error(
    proxy: tuple[str, Script], call: Any, message: str
) -> None:
    url, script = proxy
    with _client(url) as client, pytest.raises(TypeError, match=message):
        call(client.memory.for_scope("p"))
    assert script.received == []  # refused before anything was sent
