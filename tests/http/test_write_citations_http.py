"""HTTP v1: writes citing an erased entry, and keyed retries of an erased write, answer 410."""

from __future__ import annotations

from tests.http.conftest import Served


def test_erased_citations_and_keyed_retries_answer_410(
    open_server: Served, fresh_scope: str
) -> None:
    with open_server.client() as http:
        remember = {"scope_id": fresh_scope, "text": "doomed", "idempotency_key": "load"}
        entry = http.post("/v1/memory/remember", json=remember).json()["entries"][0]
        made_up = entry["citation"] | {"memory_ref": {"scope_id": fresh_scope, "revision": 9}}
        late = http.post(
            "/v1/memory/entries/retire", json={"scope_id": fresh_scope, "citation": made_up}
        )
        assert late.status_code == 404 and late.json()["error"]["code"] == "not_found"

        forget = {"scope_id": fresh_scope, "entry_ids": [entry["entry_id"]]}
        assert http.post("/v1/memory/forget", json=forget).status_code == 200
        retry = http.post("/v1/memory/remember", json=remember)
        assert retry.status_code == 410
        assert retry.json()["error"]["details"]["entry_id"] == entry["entry_id"]
        cite = {"scope_id": fresh_scope, "citation": entry["citation"]}
        for route in ("revise", "retire", "reactivate"):
            body = cite | {"text": "back"} if route == "revise" else cite
            answer = http.post(f"/v1/memory/entries/{route}", json=body)
            assert answer.status_code == 410, route
            assert answer.json()["error"]["code"] == "erased"
        head = http.post("/v1/memory/head", json={"scope_id": fresh_scope}).json()
        assert head["memory_ref"]["revision"] == 2  # the remember and the forget
