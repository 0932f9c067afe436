"""A live server with the inspector on, auth on, the hash embedder and a scripted reranker.

The garden scope is seeded through HTTP v1: plain entries, a revised one, a retired one and
two whose text is markup (the escaping tests look for it on the page).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from powercontext.config import (
    DatabaseConfig,
    HttpConfig,
    InferenceConfig,
    ServerSettings,
    UiConfig,
)
from powercontext.memory.models import InferenceUsage, MemoryHit, MemoryRerankDecision
from powercontext.server import create_app
from tests.http.live import live_server, with_reranker

CHROMIUM = Path("/usr/bin/chromium")
KEY_GARDEN = "ui-key-garden-0001"
KEY_OTHER = "ui-key-other-00002"
SCOPE = "garden"
XSS_IMG = '<img src=x onerror="window.__pcXss=1"> tomato seedlings'
XSS_SCRIPT = "<script>window.__pcXss=2</script> tomato cage"
GARDEN = [
    "tomato plants need six hours of sun",
    "water the tomato beds early in the morning",
    "basil grows well next to tomato plants",
    "the tomato harvest peaks in August",
    "compost the tomato vines after the first frost",
    "carrots prefer loose sandy soil",
    XSS_IMG,
    XSS_SCRIPT,
]
REVISED_FROM = "the shed key is under the blue pot"
REVISED_TO = "the shed key is under the red pot"
RETIRED = "the greenhouse door sticks when it rains"

# The machine's network is closed: Chromium's background fetches only add refused connections.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

requires_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"needs Debian's chromium at {CHROMIUM} (apt-get install chromium)",
)


@dataclass
class PickingReranker:
    """Keeps the odd ranks, last first, and adds an out-of-range and a repeated rank, so the
    trace has a selection that differs from the coarse order and two discarded ranks."""

    policy_id: str = "tests.ui.odd-ranks.v1"
    calls: list[str] = field(default_factory=list)

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        self.calls.append(query)
        odd = [rank for rank in range(len(candidates), 0, -1) if rank % 2 == 1]
        ranks = (*odd, len(candidates) + 7, odd[0])
        usage = InferenceUsage(requests=1, input_tokens=40 * len(candidates), output_tokens=9)
        return MemoryRerankDecision(selected_ranks=ranks, usage=usage)


@dataclass
class Inspector:
    url: str
    reranker: PickingReranker
    seeded: dict[str, Any]

    def api(self, key: str | None = KEY_GARDEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def _seed(url: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY_GARDEN}"}) as http:
        entries = [{"kind": "fact", "text": text} for text in [*GARDEN, REVISED_FROM, RETIRED]]
        written = http.post(
            "/v1/memory/remember", json={"scope_id": SCOPE, "entries": entries}
        ).raise_for_status()
        by_text = {e["text"]: e for e in written.json()["entries"]}
        revised = http.post(
            "/v1/memory/entries/revise",
            json={
                "scope_id": SCOPE,
                "citation": by_text[REVISED_FROM]["citation"],
                "text": REVISED_TO,
                "reason": "painted the pot",
            },
        ).raise_for_status()
        http.post(
            "/v1/memory/entries/retire",
            json={"scope_id": SCOPE, "citation": by_text[RETIRED]["citation"], "reason": "fixed"},
        ).raise_for_status()
    return {
        "revised_entry_id": revised.json()["entries"][0]["entry_id"],
        "retired_entry_id": by_text[RETIRED]["entry_id"],
    }


def ui_settings(db: Path, *, enabled: bool) -> ServerSettings:
    keys = {KEY_GARDEN: [SCOPE], KEY_OTHER: ["elsewhere"]}
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="hash"),
        http=HttpConfig(api_keys=SecretStr(json.dumps(keys))),
        ui=UiConfig(enabled=enabled),
    )


@pytest.fixture(scope="session")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inspector]:
    db = tmp_path_factory.mktemp("ui") / "ui.db"
    reranker = PickingReranker()

    factory = with_reranker(reranker)

    app = create_app(ui_settings(db, enabled=True), runtime_factory=factory)
    with live_server(app) as server:
        yield Inspector(url=server.url, reranker=reranker, seeded=_seed(server.url))


# Module scope, not session: playwright's sync API keeps an event loop running in the main
# thread while it is open, and every later test calling asyncio.run() would fail.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None:
        pytest.skip(f"needs Debian's chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()
