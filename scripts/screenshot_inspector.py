"""Render docs/img/inspector.png: the memory inspector after a search made from the page.

Runs a throwaway server (temporary SQLite file, hash embedder, a deterministic demo reranker)
on a loopback port, seeds a small project memory through HTTP v1, searches from the page in
headless Chromium and saves a screenshot. Needs Debian's chromium (/usr/bin/chromium) and
the `playwright` package; nothing is downloaded.

    python scripts/screenshot_inspector.py [--out docs/img/inspector.png]
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path

import httpx
import uvicorn
from playwright.sync_api import sync_playwright
from pydantic import SecretStr

from powercontext.config import (
    DatabaseConfig,
    HttpConfig,
    InferenceConfig,
    RuntimeConfig,
    ServerSettings,
    UiConfig,
)
from powercontext.memory.models import InferenceUsage, MemoryHit, MemoryRerankDecision
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime, open_runtime
from powercontext.server import create_app

CHROMIUM = "/usr/bin/chromium"
KEY = "demo-inspector-key-01"
SCOPE = "project-atlas"
QUERY = "when do we deploy to production?"
MEMORY = [
    "Production deploys happen on Tuesdays after the 10:00 stand-up.",
    "Staging is redeployed automatically on every merge to main.",
    "Deploys to production need a green CI run and one approving review.",
    "The team retro is every second Friday.",
    "Rollback: run `make rollback` within 30 minutes of a bad deploy.",
    "Maya owns the release checklist; ask her before a hotfix deploy.",
    "Database migrations run before the production deploy, never after.",
    "The office coffee machine is descaled on Mondays.",
    "Feature flags are cleaned up at the end of each quarter.",
    "Freeze: no production deploys between Dec 20 and Jan 3.",
]
# Metadata on a few entries, so the page shows it under their text.
METADATA = {
    "Production deploys happen on Tuesdays after the 10:00 stand-up.": {"source": "standup"},
    "Deploys to production need a green CI run and one approving review.": {
        "source": "handbook",
        "section": "4.2",
    },
}
REVISION = ("Production deploys happen on Tuesdays after the 10:00 stand-up.", "moved to Wednesday")


def _stems(text: str) -> set[str]:
    return {word[:6] for word in re.findall(r"\w+", text.lower()) if len(word) > 2}


class KeywordReranker:
    """Demo policy: keeps candidates sharing at least two query words, most shared first."""

    policy_id = "demo.keyword-overlap.v1"

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        words = _stems(query)
        overlap = [
            (len(words & _stems(hit.text)), rank) for rank, hit in enumerate(candidates, start=1)
        ]
        ranks = tuple(rank for shared, rank in sorted(overlap, key=lambda o: -o[0]) if shared > 1)
        chars = sum(len(hit.text) for hit in candidates)
        usage = InferenceUsage(requests=1, input_tokens=120 + chars // 4, output_tokens=12)
        return MemoryRerankDecision(selected_ranks=(*ranks, len(candidates) + 3), usage=usage)


@contextmanager
def serve(settings: ServerSettings) -> Iterator[str]:
    reranker = KeywordReranker()

    def factory(
        s: ServerSettings, observer: SearchObserver
    ) -> AbstractAsyncContextManager[Runtime]:
        return open_runtime(s, memory_reranker=reranker, search_observer=observer)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        create_app(settings, runtime_factory=factory), log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def seed(url: str) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as http:
        entries = [
            {"kind": "fact", "text": text, "metadata": METADATA.get(text, {})} for text in MEMORY
        ]
        written = http.post("/v1/memory/remember", json={"scope_id": SCOPE, "entries": entries})
        old = next(
            e for e in written.raise_for_status().json()["entries"] if e["text"] == REVISION[0]
        )
        http.post(
            "/v1/memory/entries/revise",
            json={
                "scope_id": SCOPE,
                "citation": old["citation"],
                "text": REVISION[0].replace("Tuesdays", "Wednesdays"),
                "reason": REVISION[1],
            },
        ).raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/img/inspector.png"))
    parser.add_argument("--width", type=int, default=1440, help="viewport width in pixels")
    parser.add_argument(
        "--history", action="store_true", help="show the entries tab and one entry's history"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = ServerSettings(
            database=DatabaseConfig(url=f"sqlite:///{Path(tmp) / 'demo.db'}"),
            inference=InferenceConfig(embedding_model="hash"),
            http=HttpConfig(api_keys=SecretStr(json.dumps({KEY: [SCOPE]}))),
            ui=UiConfig(enabled=True),
            # The hash embedder's similarities are low: admit them so both channels show.
            runtime=RuntimeConfig(search_min_similarity=0.05),
        )
        with serve(settings) as url, sync_playwright() as playwright:
            seed(url)
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": args.width, "height": 760})
            page.goto(f"{url}/ui")
            page.wait_for_selector("body[data-ready=true]")
            page.fill("#api-key", KEY)
            page.click("#key-form button[type=submit]")
            page.fill("#scope", SCOPE)
            page.fill("#query", QUERY)
            page.fill("#limit", "5")
            page.click("#search-form button[type=submit]")
            page.wait_for_selector("#final-table tbody tr")
            if args.history:
                page.click("button[data-tab=entries-tab]")
                page.click("#load-entries")
                revised = page.locator("#entries-table tbody tr", has_text="Wednesdays")
                revised.locator("button.history-button").click()
                page.wait_for_selector("#history-table tbody tr")
            page.fill("#api-key", "")  # keep the key out of the picture
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=True)
            browser.close()
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
