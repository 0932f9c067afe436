"""`/v1/memory/changes` pages by whole revisions: a revision with more changes than `limit`
comes whole (the stores never split one, so `next_since_revision` can resume after it). The
contract said `limit` was the "Maximum changes returned", which a client sizing its buffers
or asserting `len(changes) <= limit` would take at its word."""

from __future__ import annotations

from tests.http.conftest import Served


def test_a_revision_with_more_changes_than_the_limit_comes_whole(
    bare_server: Served, fresh_scope: str
) -> None:
    with bare_server.client() as http:
        written = http.post(
            "/v1/memory/remember",
            json={"scope_id": fresh_scope, "entries": [{"text": f"e{i}"} for i in range(3)]},
        )
        assert written.status_code == 200, written.text
        page = http.post("/v1/memory/changes", json={"scope_id": fresh_scope, "limit": 1}).json()
        contract = http.get("/openapi.json").json()["components"]["schemas"]
    assert [change["revision"] for change in page["changes"]] == [1, 1, 1]
    assert page["next_since_revision"] == 1
    limit = contract["ChangesRequest"]["properties"]["limit"]["description"]
    assert "whole revision" in limit and "more than" in limit, limit
    assert "whole revision" in contract["ChangesPageModel"]["properties"]["changes"]["description"]
