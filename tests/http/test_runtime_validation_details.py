"""Every 422 `validation_error` lists its errors in `details.errors` (loc, msg, type), as the
contract says: those the runtime raises (a bound, a line of a stream, a rule of several
fields) too, which carried `details: {}`."""

from __future__ import annotations

from tests.http.conftest import Served


def test_a_runtime_validation_error_lists_itself_in_details(
    open_server: Served, fresh_scope: str
) -> None:
    searches = [{"query": f"q{i}"} for i in range(65)]
    with open_server.client() as http:
        too_many = http.post(
            "/v1/memory/search/batch", json={"scope_id": fresh_scope, "searches": searches}
        )
        bad_line = http.post(
            f"/v1/memory/remember/stream?scope_id={fresh_scope}",
            content=b'{"text": "fine"}\n{"text": "   "}\n',
            headers={"content-type": "application/x-ndjson"},
        )
    for answer in (too_many, bad_line):
        assert answer.status_code == 422, answer.text
        error = answer.json()["error"]
        assert error["code"] == "validation_error"
        (only,) = error["details"]["errors"]
        assert only["type"] == "value_error" and only["msg"] in error["message"]
    assert too_many.json()["error"]["details"]["errors"][0]["loc"] == []
