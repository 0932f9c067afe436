"""entries/get answers only for a revision at which the cited version existed (issue 19
item 6): not before it was written, not beyond the head."""

from __future__ import annotations

from typing import Any

from tests.http.conftest import Served


def _get(served: Served, citation: dict[str, Any], revision: int) -> Any:
    cited = {**citation, "memory_ref": {**citation["memory_ref"], "revision": revision}}
    scope = citation["memory_ref"]["scope_id"]
    with served.client() as client:
        return client.post("/v1/memory/entries/get", json={"scope_id": scope, "citation": cited})


def test_get_refuses_revisions_before_the_entry_or_beyond_the_head(
    open_server: Served, fresh_scope: str
) -> None:
    with open_server.client() as client:
        for text in ("first note", "second note"):
            written = client.post(
                "/v1/memory/remember", json={"scope_id": fresh_scope, "text": text}
            )
            assert written.status_code == 200
    citation = written.json()["entries"][0]["citation"]
    assert citation["memory_ref"]["revision"] == 2

    found = _get(open_server, citation, 2)
    assert found.status_code == 200
    assert found.json()["citation"]["memory_ref"]["revision"] == 2
    for made_up in (1, 3, 2**62):
        refused = _get(open_server, citation, made_up)
        assert refused.status_code == 404, (made_up, refused.text)
        assert refused.json()["error"]["code"] == "not_found"
