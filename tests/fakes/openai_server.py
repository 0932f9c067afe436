"""A loopback fake of the OpenAI-compatible HTTP API: chat completions and embeddings.

A real HTTP server on 127.0.0.1 with an ephemeral port, run in a background thread, so the
provider SDK, its HTTP client and pydantic-ai's error mapping are all exercised for real. Each
endpoint answers from a script of replies, in order; every request is recorded. A request with
no scripted reply left gets HTTP 418 and is recorded in `unexpected`, so a test can tell it
apart from any reply it scripted.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any
    """The parsed JSON body (None when it was not JSON)."""


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[RecordedRequest], Reply]
Scripted = Reply | Responder


def _json_reply(payload: object, status: int = 200, **headers: str) -> Reply:
    return Reply(status=status, body=json.dumps(payload).encode(), headers=headers)


def _completion(message: dict[str, Any], finish_reason: str, usage: tuple[int, int]) -> Reply:
    return _json_reply(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": usage[0] + usage[1],
            },
        }
    )


def tool_call(arguments: str, *, usage: tuple[int, int] = (120, 8)) -> Responder:
    """The model calls the request's first tool with `arguments` (raw JSON text, may be bad)."""

    def respond(request: RecordedRequest) -> Reply:
        tools = request.body.get("tools") or [{"function": {"name": "missing_tool"}}]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_fake_1",
                    "type": "function",
                    "function": {"name": tools[0]["function"]["name"], "arguments": arguments},
                }
            ],
        }
        return _completion(message, "tool_calls", usage)

    return respond


def text_reply(content: str, *, usage: tuple[int, int] = (120, 12)) -> Reply:
    """The model answers in prose instead of calling the output tool."""
    return _completion({"role": "assistant", "content": content}, "stop", usage)


def error_reply(status: int, message: str, **headers: str) -> Reply:
    """An OpenAI-style error envelope; `message` lets a test plant a marker in the body."""
    code = "rate_limit_exceeded" if status == 429 else "server_error"
    return _json_reply(
        {"error": {"message": message, "type": code, "param": None, "code": code}},
        status,
        **headers,
    )


def raw_reply(body: bytes, *, status: int = 200, content_type: str = "text/plain") -> Reply:
    return Reply(status=status, body=body, content_type=content_type)


def slow(reply: Scripted, delay: float) -> Responder:
    def respond(request: RecordedRequest) -> Reply:
        base = reply(request) if callable(reply) else reply
        return Reply(base.status, base.body, base.content_type, delay, base.headers)

    return respond


def embeddings_reply(dimension: int, *, count: int | None = None) -> Responder:
    """Deterministic vectors, one per input (or `count` of them, to simulate a broken server)."""

    def respond(request: RecordedRequest) -> Reply:
        inputs = request.body["input"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        n = len(inputs) if count is None else count
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [
                    float((len(inputs[i % len(inputs)]) + j) % 7 + 1) for j in range(dimension)
                ],
            }
            for i in range(n)
        ]
        return _json_reply(
            {
                "object": "list",
                "data": data,
                "model": request.body["model"],
                "usage": {"prompt_tokens": 5 * len(inputs), "total_tokens": 5 * len(inputs)},
            }
        )

    return respond


class FakeOpenAIServer:
    """Use as a context manager; `base_url` ends in /v1 like the real API."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.unexpected: list[RecordedRequest] = []
        self._scripts: dict[str, deque[Scripted]] = {
            "/v1/chat/completions": deque(),
            "/v1/embeddings": deque(),
        }
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script_chat(self, *replies: Scripted) -> None:
        with self._lock:
            self._scripts["/v1/chat/completions"].extend(replies)

    def script_embeddings(self, *replies: Scripted) -> None:
        with self._lock:
            self._scripts["/v1/embeddings"].extend(replies)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [request for request in self.requests if request.path == path]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.requests_to("/v1/chat/completions")

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            script = self._scripts.get(request.path)
            if not script:
                self.unexpected.append(request)
                return None
            scripted = script.popleft()
        return scripted(request) if callable(scripted) else scripted

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                path = self.path.split("?", 1)[0]
                request = RecordedRequest(
                    path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                reply = fake._next_reply(request)
                if reply is None:
                    reply = error_reply(418, f"no scripted reply for {path}")
                if reply.delay and fake._stopping.wait(reply.delay):
                    return
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(reply.body)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing left to tell it

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler
