"""A fake rerank endpoint: a loopback `POST /rerank` server of the Cohere, Jina and TEI shapes.

Point `POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENDPOINT_URL` (with the `endpoint` rerank
provider) at its `url` to test that path without a model; `mode` scripts failures.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def overlap_scores(query: str, documents: list[str]) -> list[float]:
    """A deterministic stand-in for a cross-encoder: the share of query words in a document."""
    words = set(query.lower().split())
    return [len(words & set(d.lower().split())) / max(len(words), 1) for d in documents]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up on a slow answer (the deadline tests) closes the socket while
        # the handler still writes: expected here, so no traceback on stderr.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeRerankEndpoint:
    """A threaded HTTP server on 127.0.0.1. `mode` picks the answer: `cohere` (default), `tei`,
    `garbage`, `not-json`, `429`, `500`, `slow` or `wrong-index`. Requests are recorded."""

    def __init__(self) -> None:
        self.mode = "cohere"
        self.delay = 0.0
        self.requests: list[tuple[dict[str, str], Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw)
                fake.requests.append((dict(self.headers), body))
                status, payload = fake.answer(body)
                if fake.mode == "slow":
                    time.sleep(fake.delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/rerank"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def answer(self, body: dict[str, Any]) -> tuple[int, object]:
        documents = body.get("documents", body.get("texts", []))
        scores = overlap_scores(body["query"], documents)
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
        if self.mode == "429":
            return 429, {"message": "rate limited " + body["query"]}
        if self.mode == "500":
            return 500, {"message": "boom " + body["query"]}
        if self.mode == "garbage":
            return 200, {"results": [{"index": "one", "relevance_score": "high"}]}
        if self.mode == "not-json":
            return 200, b"<html>proxy error</html>"
        if self.mode == "tei":
            return 200, [{"index": i, "score": scores[i]} for i in ranked]
        if self.mode == "wrong-index":
            return 200, {
                "results": [
                    {"index": 99, "relevance_score": 5.0},
                    {"index": -3, "relevance_score": 4.0},
                    {"index": 1, "relevance_score": 3.0},
                    {"index": 1, "relevance_score": 2.0},
                ]
            }
        top_n = body.get("top_n", len(ranked))
        return 200, {
            "results": [{"index": i, "relevance_score": scores[i]} for i in ranked][:top_n]
        }

    def __enter__(self) -> FakeRerankEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
