"""The inspector against hostile memory: agents write the text, kind, metadata, reason and
scope id it shows. In real Chromium: no payload runs, each shows literally, a long unbroken
string cannot widen the page, and the key never leaves the tab; and the headers that keep
other sites from framing the pages or reaching the data routes."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
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
from powercontext.server import create_app
from tests.http.live import live_server, with_reranker
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, PickingReranker, requires_chromium

KEY = "ui-key-hostile-0003"
PWN = "window.__pwned=1;document.title='PWNED'"
IMG = f'"\'><img src=x onerror="{PWN}">'
SCRIPT = f"<script>{PWN}</script>"
CLOSE = f'</textarea></td></table><svg onload="{PWN}">'
JS_URL = f"javascript:{PWN}"
TEMPLATE = "{{constructor.constructor('window.__pwned=1')()}} ${window.__pwned=1}"
BIDI = "\u202eevil\u202c"
LONG = "W" * 3000  # no break opportunity anywhere
PAYLOADS = [IMG, SCRIPT, CLOSE, JS_URL, TEMPLATE, BIDI]
SCOPE = "hostile" + IMG[:40]
METADATA = {IMG: SCRIPT, CLOSE: JS_URL, TEMPLATE: BIDI, LONG: LONG, "nested": {"a": [IMG]}}
WIDTH = 1400


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("hostile") / "h.db"
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="hash"),
        http=HttpConfig(api_keys=SecretStr(json.dumps({KEY: ["*"]}))),
        ui=UiConfig(enabled=True),
    )
    app = create_app(settings, runtime_factory=with_reranker(PickingReranker()))
    with live_server(app) as server:
        auth = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=server.url, headers=auth, timeout=30) as http:
            entries = [
                {"kind": text[:64], "text": f"{text} payload", "metadata": METADATA}
                for text in [*PAYLOADS, LONG]
            ]
            written = http.post(
                "/v1/memory/remember", json={"scope_id": SCOPE, "entries": entries}
            ).raise_for_status()
            http.post(
                "/v1/memory/entries/revise",
                json={
                    "scope_id": SCOPE,
                    "citation": written.json()["entries"][0]["citation"],
                    "text": f"{SCRIPT} revised payload",
                    "reason": IMG + SCRIPT + CLOSE,
                },
            ).raise_for_status()
        yield server.url


@requires_chromium
def test_hostile_memory_shows_literally_and_runs_nothing(browser: Any, hostile: str) -> None:
    context = browser.new_context(viewport={"width": WIDTH, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    events: list[str] = []
    page.on("pageerror", lambda exc: events.append(str(exc)))
    page.on("console", lambda msg: events.append(msg.text) if msg.type == "error" else None)
    page.on("dialog", lambda dialog: (events.append(dialog.message), dialog.dismiss()))
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    try:
        page.goto(f"{hostile}/ui")
        page.wait_for_selector("body[data-ready=true]")
        page.fill("#api-key", KEY)
        page.click("#key-form button[type=submit]")
        page.click("#load-scopes")
        page.wait_for_selector("#scope-list option", state="attached")
        assert page.eval_on_selector("#scope-list option", "o => o.value") == SCOPE
        page.fill("#scope", SCOPE)
        page.fill("#query", f"payload {SCRIPT}")
        page.fill("#limit", "20")
        page.click("#search-form button[type=submit]")
        page.wait_for_selector("#final-table tbody tr")
        shown = page.text_content("#search-tab") or ""
        page.click("button[data-tab=entries-tab]")
        page.click("#load-entries")
        page.wait_for_selector("#entries-table tbody tr")
        assert page.text_content("#status") == f"{len(PAYLOADS) + 1} active entries in {SCOPE}."
        row = page.locator("#entries-table tbody tr", has_text="revised payload")
        row.locator("button.history-button").click()
        page.wait_for_selector("#history-table tbody tr")
        shown += page.text_content("#entries-tab") or ""

        assert page.evaluate("window.__pwned") is None
        assert page.title() == "PowerContext inspector"
        assert events == []
        assert page.locator("main img, main script, main svg, main textarea").count() == 0
        for text in [*PAYLOADS, LONG]:
            assert text in shown, text  # as text: parsed markup would have lost its tags
        reasons = page.locator("#history-table tbody td:nth-child(5)").all_text_contents()
        assert IMG + SCRIPT + CLOSE in reasons
        # A 3000-character word (text, kind, metadata key and value) wraps inside its cell.
        for tab in ("entries-tab", "search-tab"):
            page.click(f"button[data-tab={tab}]")
            assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH, tab
        # The key travels in a header only: never in an address, never in localStorage.
        assert requested and not any(KEY in url for url in requested)
        assert page.evaluate("localStorage.length") == 0
    finally:
        context.close()


def test_pages_refuse_framing_and_run_only_their_own_scripts(hostile: str) -> None:
    with httpx.Client(base_url=hostile) as http:
        for path in ("/ui", "/ui/static/app.js", "/docs", "/docs/static/start.js"):
            headers = http.get(path).raise_for_status().headers
            assert headers["x-frame-options"] == "DENY", path
            policy = headers["content-security-policy"]
            assert "frame-ancestors 'none'" in policy, path
            script = next(p for p in policy.split(";") if p.strip().startswith("script-src"))
            assert script.split() == ["script-src", "'self'"], path


class _AttackerPage(http.server.BaseHTTPRequestHandler):
    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: Any) -> None:
        pass


@requires_chromium
def test_another_site_cannot_search_through_the_inspector(browser: Any, tmp_path: Path) -> None:
    """Auth off, and a page under another name that DNS points at 127.0.0.1. Its simple
    no-cors POSTs (no preflight) and a CORS one reach no search (the gate's Origin rule, the
    JSON Content-Type rule and no CORS headers all stand in the way), and after rebinding
    the name to the server's own port the inspector is not served (the Host rule)."""
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'x.db'}"),
        inference=InferenceConfig(embedding_model="hash"),
        ui=UiConfig(enabled=True),
    )
    reranker = PickingReranker()
    app = create_app(settings, runtime_factory=with_reranker(reranker))
    with live_server(app) as server:
        httpx.post(
            f"{server.url}/v1/memory/remember",
            json={"scope_id": "s", "entries": [{"text": "secret tomato"}]},
        ).raise_for_status()
        target = json.dumps(f"{server.url}/ui/api/search")
        body = json.dumps(json.dumps({"scope_id": "s", "query": "secret tomato"}))
        _AttackerPage.page = f"""<script>
const body = {body};
Promise.allSettled([
  fetch({target}, {{method: "POST", mode: "no-cors", body}}),
  fetch({target}, {{method: "POST", mode: "no-cors", body: new Blob([body])}}),
  fetch({target}, {{method: "POST", headers: {{"Content-Type": "application/json"}}, body}}),
]).then(() => {{ document.title = "done"; }});
</script>""".encode()
        attacker = http.server.HTTPServer(("127.0.0.1", 0), _AttackerPage)
        threading.Thread(target=attacker.serve_forever, daemon=True).start()
        args = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP evil.test 127.0.0.1"]
        try:
            # A browser of its own: the name mapping is a launch option.
            chromium = browser.browser_type.launch(
                executable_path=str(CHROMIUM), args=args, headless=True
            )
            try:
                page = chromium.new_page()
                page.goto(f"http://evil.test:{attacker.server_port}/")
                page.wait_for_function("document.title === 'done'", timeout=10_000)
                port = server.url.rsplit(":", 1)[1]
                for path in ("/ui", "/ui/api/scopes"):
                    rebound = page.goto(f"http://evil.test:{port}{path}")
                    assert rebound is not None and rebound.status == 403, path
            finally:
                chromium.close()
        finally:
            attacker.shutdown()
            attacker.server_close()
        # The same search without the foreign Origin runs: the refusal came from the Origin.
        assert reranker.calls == []
        httpx.post(
            f"{server.url}/ui/api/search", json={"scope_id": "s", "query": "secret tomato"}
        ).raise_for_status()
        assert reranker.calls == ["secret tomato"]
