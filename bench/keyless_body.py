"""What a large remember body costs the other clients of an auth-enabled server.

    python bench/keyless_body.py                  # one 60 MB keyless remember batch
    python bench/keyless_body.py --megabytes 30 --rounds 3
    python bench/keyless_body.py --mode keyed --megabytes 32   # a key holder's raw 32 MB body
    python bench/keyless_body.py --mode keyed --megabytes 32 --max-write-body-bytes 67108864
    python bench/keyless_body.py --mode keyed --megabytes 1 --text-chars 1   # 1 MiB, ~70k entries

A real uvicorn server (auth on, SQLite) gets a valid JSON remember batch of --megabytes on one
connection, while a keyed client sends `head` requests in a loop on another. Reported: the big
request's status and time to answer, the slowest and median keyed request meanwhile, and the
server process's peak resident memory growth.

- `keyless` (default): no `Authorization` header. Before issue 19 the server read and parsed
  the whole body before checking the key (2.5 s stall, 1.4 GB for 60 MB); now the key is
  decided from the headers.
- `keyed`: with a valid key. Parsing JSON holds the GIL, so the whole parse stalls every other
  request; the write body limit (HTTP_MAX_WRITE_BODY_BYTES, 1 MiB) now refuses the body from its
  Content-Length. `--max-write-body-bytes 67108864` measures the server without that limit
  (only the general 64 MiB one), as before.

Figures go to stdout and bench/results/keyless_body.json (keyed_body.json for `keyed`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from powercontext.config import DatabaseConfig, HttpConfig, InferenceConfig, ServerSettings
from powercontext.server import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import write_results
from tests.http.live import live_server

KEY = "bench-key-0123456789"


def big_body(megabytes: float, text_chars: int = 200) -> bytes:
    """A valid remember batch of at most `megabytes` MiB, of entries with `text_chars` each."""
    if text_chars <= 1:
        entry = b'{"text": "x"},'  # the most entries a body can hold
    else:
        entry = b'{"kind": "note", "text": "' + b"x" * text_chars + b'", "metadata": {"n": 1}},'
    head, tail = b'{"scope_id": "bench", "entries": [', b"]}"
    count = (int(megabytes * 1024 * 1024) - len(head) - len(tail)) // len(entry)
    return head + entry * (count - 1) + entry[:-1] + tail


def one_round(url: str, body: bytes, keyed: bool) -> dict[str, Any]:
    parts = urlsplit(url)
    outcome: dict[str, Any] = {}

    def send() -> None:
        started = time.perf_counter()
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=300) as sock:
                head = (
                    "POST /v1/memory/remember HTTP/1.1\r\n"
                    f"Host: {parts.netloc}\r\nContent-Type: application/json\r\n"
                    + (f"Authorization: Bearer {KEY}\r\n" if keyed else "")
                    + f"Content-Length: {len(body)}\r\n\r\n"
                )
                sock.sendall(head.encode())
                # Refused before the body was read: the server may close the connection.
                with contextlib.suppress(OSError):
                    sock.sendall(body)
                answer = sock.recv(64)
                outcome["status"] = answer.split(b" ")[1].decode() if answer else "closed"
        except OSError as exc:
            outcome["status"] = f"error {type(exc).__name__}"
        outcome["answered_seconds"] = round(time.perf_counter() - started, 3)

    sender = threading.Thread(target=send)
    latencies: list[float] = []
    auth = {"Authorization": f"Bearer {KEY}"}
    # A long timeout: the stall is what is measured, not a failure.
    with httpx.Client(base_url=url, headers=auth, timeout=300) as client:
        sender.start()
        while sender.is_alive():
            started = time.perf_counter()
            client.post("/v1/memory/head", json={"scope_id": "bench"}).raise_for_status()
            latencies.append(time.perf_counter() - started)
            time.sleep(0.005)
    sender.join()
    latencies.sort()
    return outcome | {
        "keyed_requests": len(latencies),
        "keyed_p50_ms": round(1000 * latencies[len(latencies) // 2], 1),
        "keyed_max_ms": round(1000 * latencies[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=60)
    parser.add_argument("--text-chars", type=int, default=200, help="1: tiny entries")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--mode", choices=["keyless", "keyed"], default="keyless")
    parser.add_argument(
        "--max-write-body-bytes",
        type=int,
        default=HttpConfig().max_write_body_bytes,
        help="the server's remember body limit (64 MiB: as before the write limit)",
    )
    args = parser.parse_args()
    body = big_body(args.megabytes, args.text_chars)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory() as tmp:
        settings = ServerSettings(
            database=DatabaseConfig(url=f"sqlite:///{Path(tmp) / 'bench.db'}"),
            inference=InferenceConfig(embedding_model="none"),
            http=HttpConfig(
                api_keys=SecretStr(json.dumps({KEY: ["*"]})),
                max_write_body_bytes=args.max_write_body_bytes,
            ),
        )
        with live_server(create_app(settings)) as server:
            keyed = args.mode == "keyed"
            rounds = [one_round(server.url, body, keyed) for _ in range(args.rounds)]
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    write_results(
        "keyless_body" if args.mode == "keyless" else "keyed_body",
        {
            "mode": args.mode,
            "megabytes": args.megabytes,
            "text_chars": args.text_chars,
            "body_bytes": len(body),
            "max_write_body_bytes": args.max_write_body_bytes,
            "rounds": rounds,
            # The server runs in this process (a thread): its peak growth, the client's
            # body included.
            "peak_rss_growth_mb": round((rss_after - rss_before) / 1024, 1),
        },
    )


if __name__ == "__main__":
    main()
