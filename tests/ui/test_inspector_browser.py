"""The inspector page in a real headless Chromium (Debian's /usr/bin/chromium, playwright)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import (
    KEY_GARDEN,
    KEY_OTHER,
    REVISED_FROM,
    REVISED_TO,
    SCOPE,
    XSS_IMG,
    XSS_SCRIPT,
    Inspector,
    requires_chromium,
)

pytestmark = requires_chromium
OTHER_SCOPE = "elsewhere"  # the scope KEY_OTHER may use


@pytest.fixture
def page(browser: Any, inspector: Inspector) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(f"{inspector.url}/ui")
    page.wait_for_selector("body[data-ready=true]")
    page.errors = errors
    yield page
    context.close()


def _use_key(page: Any, key: str = KEY_GARDEN) -> None:
    page.fill("#api-key", key)
    page.click("#key-form button[type=submit]")
    page.fill("#scope", SCOPE)


def _search(page: Any, query: str, limit: int = 3) -> None:
    page.fill("#query", query)
    page.fill("#limit", str(limit))
    page.click("#search-form button[type=submit]")


def _texts(page: Any, selector: str) -> list[str]:
    return [str(text) for text in page.locator(selector).all_text_contents()]


def test_page_loads(page: Any) -> None:
    assert page.title() == "PowerContext inspector"
    assert page.locator("#search-tab").is_visible()
    assert page.locator("#entries-tab").is_hidden()
    assert page.errors == []


def test_searching_without_a_key_says_a_key_is_needed(page: Any) -> None:
    page.fill("#scope", SCOPE)
    _search(page, "tomato")
    page.wait_for_selector("#status.error")
    assert "unauthorized" in page.text_content("#status")
    assert page.locator("#pool-table tbody tr").count() == 0


def test_search_shows_the_coarse_pool_next_to_the_final_selection(
    page: Any, inspector: Inspector
) -> None:
    _use_key(page)
    _search(page, "tomato", limit=3)
    page.wait_for_selector("#final-table tbody tr")
    pool_rows = page.locator("#pool-table tbody tr")
    pool_size = pool_rows.count()
    assert pool_size >= 5
    odd = [rank for rank in range(pool_size, 0, -1) if rank % 2 == 1]

    assert _texts(page, "#final-table tbody tr td:nth-child(2)") == [str(r) for r in odd[:3]]
    assert _texts(page, "#final-table tbody tr td:nth-child(1)") == ["1", "2", "3"]
    assert _texts(page, "#pool-table tbody tr td:nth-child(1)") == [
        str(rank) for rank in range(1, pool_size + 1)
    ]
    selected = page.locator("#pool-table tbody tr.selected td:nth-child(1)").all_text_contents()
    assert sorted(map(int, selected)) == sorted(odd[:3])
    outcomes = _texts(page, "#pool-table tbody tr td:nth-child(5)")
    assert outcomes[odd[0] - 1] == "selected #1"
    assert outcomes.count("not selected") == pool_size - 3
    channels = set(_texts(page, "#pool-table .badge"))
    assert channels and channels <= {"fts", "vector"}

    summary = page.text_content("#search-summary")
    assert "policy tests.ui.odd-ranks.v1" in summary
    assert "fallback: no" in summary
    assert f"tokens {40 * pool_size} in / 9 out" in summary
    assert f"selected ranks [{', '.join(map(str, odd[:3]))}]" in summary
    discarded = [*odd[3:], pool_size + 7, odd[0]]
    assert f"discarded ranks [{', '.join(map(str, discarded))}]" in summary
    assert "rerank " in summary and " ms" in summary
    assert "candidates powercontext.memory.candidates.fixed.v1" in summary
    assert "candidate limit 30" in summary
    assert page.errors == []


def test_entries_and_their_revision_history(page: Any) -> None:
    _use_key(page)
    page.click("button[data-tab=entries-tab]")
    page.click("#load-entries")
    page.wait_for_selector("#entries-table tbody tr")
    texts = _texts(page, "#entries-table tbody td.text")
    assert REVISED_TO in texts and REVISED_FROM not in texts
    row = page.locator("#entries-table tbody tr", has_text=REVISED_TO)
    row.locator("button.history-button").click()
    page.wait_for_selector("#history-table tbody tr")
    history = page.locator("#history-table tbody tr")
    assert history.count() == 2
    # Newest first, as every history surface answers.
    second, first = (history.nth(i).locator("td").all_text_contents() for i in range(2))
    assert first[1:4] == ["add", "1", REVISED_FROM] and first[6] == "replaced"
    assert second[1:5] == ["revise", "2", REVISED_TO, "painted the pot"]
    assert second[6] == "current" and second[5].endswith(" UTC")
    assert int(second[0]) == int(first[0]) + 1
    assert "2 versions" in page.text_content("#history-entry")


def test_narrow_window_metadata_time_zones_and_history_in_view(
    browser: Any, inspector: Inspector
) -> None:
    """Below 900 px the columns stack, so the history panel sits under a long entries table:
    asking for a history must bring it into view. Metadata and zoned timestamps are shown."""
    with inspector.api(KEY_OTHER) as http:
        entries = [{"text": f"standup note {i}"} for i in range(40)]
        entries.append({"text": "ship the tagged build", "metadata": {"ticket": 42, "by": "ana"}})
        http.post(
            "/v1/memory/remember", json={"scope_id": OTHER_SCOPE, "entries": entries}
        ).raise_for_status()
    context = browser.new_context(viewport={"width": 800, "height": 700})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(f"{inspector.url}/ui")
        page.wait_for_selector("body[data-ready=true]")
        _use_key(page, KEY_OTHER)
        page.fill("#scope", OTHER_SCOPE)
        page.click("button[data-tab=entries-tab]")
        page.click("#load-entries")
        page.wait_for_selector("#entries-table tbody tr")
        row = page.locator("#entries-table tbody tr", has_text="ship the tagged build")
        meta = row.locator("dl.meta").text_content() or ""
        assert "ticket" in meta and "42" in meta and "by" in meta and "ana" in meta
        written = row.locator("td").nth(3).text_content() or ""
        assert written.endswith(" UTC") and written[:4].isdigit()

        table = page.locator("#entries-table").bounding_box()
        panel = page.locator("#history").bounding_box()
        assert panel["y"] >= table["y"] + table["height"]  # stacked, not side by side
        assert abs(panel["x"] - table["x"]) < 2

        page.evaluate("window.scrollTo(0, 0)")
        row.locator("button.history-button").click()
        page.wait_for_selector("#history-table tbody tr")
        top = page.evaluate("document.getElementById('history').getBoundingClientRect().top")
        assert 0 <= top < 700, top  # in view without scrolling by hand
    finally:
        context.close()


def test_wide_window_keeps_two_columns(page: Any) -> None:
    page.click("button[data-tab=entries-tab]")
    table = page.locator("#entries-table").bounding_box()
    panel = page.locator("#history").bounding_box()
    assert panel["x"] > table["x"] + table["width"] - 1


def test_entry_text_is_shown_as_text_never_as_markup(page: Any) -> None:
    _use_key(page)
    _search(page, "tomato seedlings cage", limit=10)
    page.wait_for_selector("#final-table tbody tr")
    page.click("button[data-tab=entries-tab]")
    page.click("#load-entries")
    page.wait_for_selector("#entries-table tbody tr")
    # The markup shows up literally (so it was never parsed), wherever entry text is shown.
    for table in ("#pool-table", "#entries-table"):
        texts = _texts(page, f"{table} td.text")
        assert XSS_IMG in texts and XSS_SCRIPT in texts, table
    assert any(t in (XSS_IMG, XSS_SCRIPT) for t in _texts(page, "#final-table td.text"))
    assert page.locator("main img, main script").count() == 0
    assert page.evaluate("window.__pcXss") is None
    assert page.errors == []


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def test_screenshot_renders_hits(page: Any, tmp_path: Path) -> None:
    from PIL import Image

    _use_key(page)
    _search(page, "tomato", limit=3)
    page.wait_for_selector("#final-table tbody tr")
    shot = tmp_path / "inspector.png"
    page.screenshot(path=str(shot), full_page=True)
    data = shot.read_bytes()
    width, height = _png_size(data)
    assert width >= 1400 and height >= 400 and len(data) > 20_000
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    # Rendered rows of text: many distinct colours, and the selected-row green among them.
    assert colours is not None and len(colours) > 50
    assert any(rgb == (0xE3, 0xF4, 0xE6) for _, rgb in colours)
