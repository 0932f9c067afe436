"""How the SDK sends a remember_many: one JSON request when small, else JSON lines; one call
and one revision either way."""

from __future__ import annotations

import json

import pytest

from powercontext.client.batches import MAX_JSON_BYTES, MAX_JSON_ENTRIES, remember_body
from powercontext.client.wire import remember_many
from powercontext.memory import MemoryValidationError, RememberMemoryRequest


def _requests(count: int, text_chars: int = 10, **fields: object) -> list[RememberMemoryRequest]:
    return [
        RememberMemoryRequest(text=f"{i} " + "x" * text_chars, **fields)  # type: ignore[arg-type]
        for i in range(count)
    ]


def test_a_small_batch_is_one_json_request_with_the_callers_key() -> None:
    body = remember_body("s", _requests(3, idempotency_key="k", expected_revision=4))
    assert body.lines is None and body.query is None and body.entries == 3
    assert body.json is not None
    assert body.json["idempotency_key"] == "k" and body.json["expected_revision"] == 4
    assert [e["text"] for e in body.json["entries"]] == [
        "0 xxxxxxxxxx",
        "1 xxxxxxxxxx",
        "2 xxxxxxxxxx",
    ]


@pytest.mark.parametrize(
    ("count", "text_chars"),
    [(MAX_JSON_ENTRIES + 1, 10), (3 * MAX_JSON_BYTES // 8000 + 1, 8000)],
    ids=["by-count", "by-size"],
)
def test_a_large_batch_is_one_json_lines_request(count: int, text_chars: int) -> None:
    requests = _requests(count, text_chars, idempotency_key="k", expected_revision=2)
    body = remember_body("s", requests)
    assert body.json is None and body.lines is not None and body.entries == count
    assert body.query == {"scope_id": "s", "idempotency_key": "k", "expected_revision": "2"}
    lines = body.lines.decode("utf-8").splitlines()
    assert [json.loads(line)["text"] for line in lines] == [r.text for r in requests]
    assert all("expected_revision" not in line and "idempotency_key" not in line for line in lines)


def test_a_batch_without_a_key_gets_one_drawn_per_call() -> None:
    first = remember_body("s", _requests(MAX_JSON_ENTRIES + 1))
    second = remember_body("s", _requests(MAX_JSON_ENTRIES + 1))
    assert first.query is not None and second.query is not None
    assert len(first.query["idempotency_key"]) == 32
    assert first.query["idempotency_key"] != second.query["idempotency_key"]


def test_entries_must_share_their_batch_level_fields() -> None:
    with pytest.raises(MemoryValidationError, match="at least one entry"):
        remember_body("s", [])
    mixed = [RememberMemoryRequest(text="a", expected_revision=1), RememberMemoryRequest(text="b")]
    with pytest.raises(MemoryValidationError, match="expected_revision"):
        remember_body("s", mixed)
    keys = [
        RememberMemoryRequest(text="a", idempotency_key="x"),
        RememberMemoryRequest(text="b", idempotency_key="y"),
    ]
    with pytest.raises(MemoryValidationError, match="idempotency_key"):
        remember_body("s", keys)


def test_the_wire_call_picks_the_route_and_scales_its_timeout() -> None:
    small = remember_many("s", _requests(3))
    large = remember_many("s", _requests(MAX_JSON_ENTRIES + 10))
    assert small.path == "/v1/memory/remember" and small.body is not None
    assert large.path == "/v1/memory/remember/stream" and large.lines is not None
    assert large.entries == MAX_JSON_ENTRIES + 10
    assert small.idempotent and large.idempotent
