"""The inspector says when a scope's index was derived under other index settings."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx

from powercontext.server import create_app
from tests.http.live import live_server
from tests.ui.conftest import KEY_GARDEN, SCOPE, ui_settings


def test_search_reports_a_stale_index_profile(tmp_path: Path) -> None:
    db = tmp_path / "ui.db"
    auth = {"Authorization": f"Bearer {KEY_GARDEN}"}
    with (
        live_server(create_app(ui_settings(db, enabled=True))) as server,
        httpx.Client(base_url=server.url, headers=auth) as http,
    ):
        http.post(
            "/v1/memory/remember", json={"scope_id": SCOPE, "text": "tomato seedlings"}
        ).raise_for_status()
        search = {"scope_id": SCOPE, "query": "tomato"}
        fresh = http.post("/ui/api/search", json=search).json()
        assert fresh["index_profile_stale"] is False
        # Another process, with other index settings, recorded its profile for the scope.
        with sqlite3.connect(db) as conn:
            conn.execute(
                "UPDATE scope_index_profiles SET profile = '{}' WHERE scope_id = ?", (SCOPE,)
            )
        stale = http.post("/ui/api/search", json=search).json()
        assert stale["index_profile_stale"] is True
        assert [hit["text"] for hit in stale["hits"]] == ["tomato seedlings"]  # still searchable
        ready = http.get("/v1/ready").json()
        assert (
            "1 scope indexed under an older profile" in ready["checks"]["index_profile"]["detail"]
        )
