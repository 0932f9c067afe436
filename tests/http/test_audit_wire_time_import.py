"""An import file's times are ISO 8601 text, as export writes them: a number is refused with
a 422 and nothing is written (pydantic would read it as Unix seconds, 1970)."""

from __future__ import annotations

import json

import pytest

from powercontext.memory.transfer import FORMAT
from tests.http.conftest import Served


def _body(header_time: object, entry: dict[str, object]) -> bytes:
    header = {
        "format": FORMAT,
        "version": 1,
        "scope_id": "elsewhere",
        "revision": 1,
        "entry_count": 1,
        "exported_at": header_time,
    }
    line = {"entry_id": "e1", "kind": "message", "text": "a note", "metadata": {}, **entry}
    return (json.dumps(header) + "\n" + json.dumps(line) + "\n").encode()


def _import(served: Served, scope: str, body: bytes) -> tuple[int, dict[str, object]]:
    with served.client() as http:
        reply = http.post(
            "/v1/memory/import",
            params={"scope_id": scope},
            content=body,
            headers={"content-type": "application/x-ndjson"},
        )
    return reply.status_code, reply.json()


def _listed(served: Served, scope: str) -> list[dict[str, object]]:
    with served.client() as http:
        reply = http.post("/v1/memory/entries/list", json={"scope_id": scope})
    assert reply.status_code in (200, 404), reply.text
    return list(reply.json().get("entries", [])) if reply.status_code == 200 else []


@pytest.mark.parametrize(
    ("header_time", "entry"),
    [
        (0, {}),
        ("1700000000", {}),
        ("2024-01-01T00:00:00Z", {"occurred_at": 1700000000}),
        ("2024-01-01T00:00:00Z", {"created_at": 0}),
        ("2024-01-01T00:00:00Z", {"occurred_at": True}),
    ],
)
def test_a_numeric_time_in_an_import_file_is_refused(
    open_server: Served, fresh_scope: str, header_time: object, entry: dict[str, object]
) -> None:
    status, body = _import(open_server, fresh_scope, _body(header_time, entry))
    assert status == 422, body
    error = body["error"]
    assert isinstance(error, dict) and "ISO 8601" in str(error["message"])
    assert _listed(open_server, fresh_scope) == []


def test_iso_times_in_an_import_file_are_kept(open_server: Served, fresh_scope: str) -> None:
    entry = {"occurred_at": "2024-03-02T10:00:00+02:00", "created_at": "2024-03-02"}
    status, body = _import(open_server, fresh_scope, _body("2024-05-01T00:00:00Z", entry))
    assert status == 200, body
    [stored] = _listed(open_server, fresh_scope)
    assert stored["occurred_at"] == "2024-03-02T08:00:00Z"
