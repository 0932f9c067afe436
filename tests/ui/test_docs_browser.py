"""/docs renders Swagger UI in a real headless Chromium, offline and under its CSP (issue 19
item 9): every asset is local, so the page is not blank without a network, and the policy
(no inline script) does not block Swagger UI itself."""

from __future__ import annotations

from typing import Any

from tests.ui.conftest import Inspector, requires_chromium

pytestmark = requires_chromium


def test_docs_render_the_operations_offline(browser: Any, inspector: Inspector) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    outside: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on(
        "request",
        lambda request: (
            None if request.url.startswith(inspector.url) else outside.append(request.url)
        ),
    )
    try:
        page.goto(f"{inspector.url}/docs")
        page.wait_for_selector("#operations-memory-search")
        assert page.locator(".opblock").count() >= 10  # one block per operation
        assert errors == []  # a CSP violation is reported as a console error
        assert outside == []
    finally:
        context.close()
