"""The inspector's server side: off by default, auth on every data route, the trace JSON."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from powercontext.config import ServerSettings
from powercontext.server import create_app
from tests.http.live import live_server, with_reranker
from tests.ui.conftest import (
    KEY_GARDEN,
    KEY_OTHER,
    RETIRED,
    REVISED_FROM,
    REVISED_TO,
    SCOPE,
    Inspector,
    PickingReranker,
    _seed,
    ui_settings,
)


def test_disabled_by_default_answers_404(tmp_path: Path) -> None:
    settings = ui_settings(tmp_path / "off.db", enabled=False)
    assert settings.ui.enabled is False
    with live_server(create_app(settings)) as server, httpx.Client(base_url=server.url) as http:
        auth = {"Authorization": f"Bearer {KEY_GARDEN}"}
        page = http.get("/ui")
        assert page.status_code == 404
        # The page's own address says how to turn it on; nothing else under /ui exists.
        assert "POWERCONTEXT_SERVER_UI_ENABLED=true" in page.json()["error"]["message"]
        assert http.get("/ui/static/app.js").status_code == 404
        assert http.get("/ui/api/scopes", headers=auth).status_code == 404
        search = http.post(
            "/ui/api/search", json={"scope_id": SCOPE, "query": "tomato"}, headers=auth
        )
        assert search.status_code == 404
        assert search.json()["error"]["code"] == "not_found"


def test_enabled_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_SERVER_UI_ENABLED", "true")
    assert ServerSettings().ui.enabled is True
    monkeypatch.setenv("POWERCONTEXT_SERVER_UI_ENABLED", "false")
    assert ServerSettings().ui.enabled is False


def test_page_is_served_without_data_and_with_a_strict_policy(inspector: Inspector) -> None:
    with inspector.api(key=None) as http:
        page = http.get("/ui")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "tomato" not in page.text
        script = http.get("/ui/static/app.js")
        assert script.status_code == 200 and "textContent" in script.text
        assert "innerHTML" not in script.text.replace("never innerHTML", "")
        assert http.get("/ui/static/style.css").status_code == 200
        assert http.get("/ui/static/../routes.py").status_code == 404
        assert http.get("/ui/static/index.html").status_code == 404


def test_data_routes_require_a_key_for_the_scope(inspector: Inspector) -> None:
    calls = [
        ("POST", "/ui/api/search", {"scope_id": SCOPE, "query": "tomato"}),
        ("POST", "/ui/api/entries", {"scope_id": SCOPE}),
        ("POST", "/ui/api/history", {"scope_id": SCOPE, "entry_id": "x"}),
    ]
    for key, status in ((None, 401), ("not-a-real-key-123", 401), (KEY_OTHER, 403)):
        with inspector.api(key) as http:
            for method, path, body in calls:
                response = http.request(method, path, json=body)
                assert response.status_code == status, (key, path)
                assert "tomato" not in response.text
            scopes = http.get("/ui/api/scopes")
            assert scopes.status_code == (401 if status == 401 else 200)
            if status == 403:
                assert scopes.json() == {"scopes": []}
    with inspector.api() as http:
        assert http.get("/ui/api/scopes").json() == {"scopes": [SCOPE]}


def test_search_returns_the_coarse_pool_and_the_selection(inspector: Inspector) -> None:
    with inspector.api() as http:
        response = http.post(
            "/ui/api/search", json={"scope_id": SCOPE, "query": "tomato", "limit": 3}
        )
    assert response.status_code == 200
    result = response.json()
    trace = result["rerank"]
    assert result["reranker"] == trace["policy_id"] == "tests.ui.odd-ranks.v1"
    pool = trace["candidates"]
    assert [c["rank"] for c in pool] == list(range(1, len(pool) + 1))
    assert len(pool) >= 5 and all("tomato" in c["text"] for c in pool[:5])
    odd = [rank for rank in range(len(pool), 0, -1) if rank % 2 == 1]
    assert trace["selected_ranks"] == odd[:3]
    assert trace["used_fallback"] is False
    assert trace["candidate_policy_id"] == "powercontext.memory.candidates.fixed.v1"
    assert trace["candidate_limit"] == 30 and trace["query_class"] is None
    # Beyond the limit, out of range and repeated ranks are all discarded, in the given order.
    assert trace["discarded_ranks"] == [*odd[3:], len(pool) + 7, odd[0]]
    assert trace["discarded_rank_count"] == len(trace["discarded_ranks"])
    usage = trace["usage"]
    assert (usage["requests"], usage["input_tokens"], usage["output_tokens"]) == (
        1,
        40 * len(pool),
        9,
    )
    assert trace["latency_ms"] >= 0 and result["elapsed_ms"] >= trace["latency_ms"]
    final = result["hits"]
    assert [hit["rank"] for hit in final] == odd[:3]
    assert [hit["position"] for hit in final] == [1, 2, 3]
    for hit in final:
        assert hit["text"] == pool[hit["rank"] - 1]["text"]
        assert pool[hit["rank"] - 1]["final_position"] == hit["position"]
    unselected = [c for c in pool if c["rank"] not in odd[:3]]
    assert all(c["final_position"] is None for c in unselected)
    assert {ch for c in pool for ch in c["matched_by"]} <= {"fts", "vector"}


def test_the_inspector_takes_the_http_bodies_whole(inspector: Inspector) -> None:
    # Built by the same translate as HTTP v1: as-of search and filters reach the runtime.
    with inspector.api() as http:
        head = http.post("/ui/api/search", json={"scope_id": SCOPE, "query": "tomato"}).json()
        then = http.post(
            "/ui/api/search", json={"scope_id": SCOPE, "query": "tomato", "revision": 1}
        ).json()
        filtered = http.post(
            "/ui/api/entries", json={"scope_id": SCOPE, "filter": {"kinds": ["recipe"]}}
        ).json()
    assert then["memory_ref"]["revision"] == 1 < head["memory_ref"]["revision"]
    assert filtered["entries"] == []


def test_entries_and_history(inspector: Inspector) -> None:
    with inspector.api() as http:
        listed = http.post("/ui/api/entries", json={"scope_id": SCOPE}).json()
        texts = [e["text"] for e in listed["entries"]]
        assert REVISED_TO in texts and REVISED_FROM not in texts and RETIRED not in texts

        revised = http.post(
            "/ui/api/history",
            json={"scope_id": SCOPE, "entry_id": inspector.seeded["revised_entry_id"]},
        ).json()
        assert [c["op"] for c in revised["changes"]] == ["revise", "add"]
        assert revised["changes"][0]["reason"] == "painted the pot"
        versions = [(v["version"], v["text"], v["active"]) for v in revised["versions"]]
        assert versions == [(2, REVISED_TO, True), (1, REVISED_FROM, False)]

        retired = http.post(
            "/ui/api/history",
            json={"scope_id": SCOPE, "entry_id": inspector.seeded["retired_entry_id"]},
        ).json()
        assert [c["op"] for c in retired["changes"]] == ["retire", "add"]
        assert [(v["text"], v["active"]) for v in retired["versions"]] == [(RETIRED, False)]

        unknown = http.post("/ui/api/history", json={"scope_id": SCOPE, "entry_id": "nope"})
        assert unknown.status_code == 404


def test_ui_routes_are_not_in_the_v1_schema(tmp_path: Path) -> None:
    app = create_app(ui_settings(tmp_path / "schema.db", enabled=True))
    paths = app.generated_openapi()["paths"]
    assert not any(path.startswith(("/ui", "/mcp")) for path in paths)


def test_search_shows_the_query_class_under_the_by_class_policy(tmp_path: Path) -> None:
    settings = ui_settings(tmp_path / "by-class.db", enabled=True)
    runtime = settings.runtime.model_copy(update={"memory_rerank_candidate_policy": "by_class"})
    app = create_app(
        settings.model_copy(update={"runtime": runtime}),
        runtime_factory=with_reranker(PickingReranker()),
    )
    with live_server(app) as server:
        _seed(server.url)
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {KEY_GARDEN}"}
        ) as http:
            counted = http.post(
                "/ui/api/search", json={"scope_id": SCOPE, "query": "how many tomato plants"}
            ).json()["rerank"]
            dated = http.post(
                "/ui/api/search", json={"scope_id": SCOPE, "query": "when was the tomato sown"}
            ).json()["rerank"]
    assert counted["candidate_policy_id"] == "powercontext.memory.candidates.by_class.v2"
    assert (counted["query_class"], counted["candidate_limit"]) == ("count", 20)
    assert (dated["query_class"], dated["candidate_limit"]) == ("time", 10)
