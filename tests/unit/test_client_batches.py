"""How the SDK cuts a large remember_many into requests the server's write limit accepts."""

from __future__ import annotations

import json

import pytest

from powercontext.client.batches import (
    MAX_PART_BYTES,
    MAX_PART_ENTRIES,
    merge_results,
    part_key,
    remember_bodies,
    split_entries,
)
from powercontext.client.wire import remember_many
from powercontext.memory import MemoryValidationError, RememberMemoryRequest
from powercontext.memory.models import MemoryRef, MemoryWriteResult


def _requests(count: int, text_chars: int = 10, **fields: object) -> list[RememberMemoryRequest]:
    return [
        RememberMemoryRequest(text=f"{i} " + "x" * text_chars, **fields)  # type: ignore[arg-type]
        for i in range(count)
    ]


def test_a_small_batch_is_one_request_with_the_callers_key() -> None:
    bodies = remember_bodies("s", _requests(3, idempotency_key="k"))
    assert len(bodies) == 1
    assert bodies[0]["idempotency_key"] == "k" and len(bodies[0]["entries"]) == 3


def test_parts_stay_within_bytes_and_entries_in_order() -> None:
    # 8000-character texts: about 125 entries fill 1 MB, so bytes decide the cut.
    bodies = remember_bodies("s", _requests(300, text_chars=8000, idempotency_key="k"))
    assert len(bodies) == 3
    assert all(len(json.dumps(b["entries"])) <= MAX_PART_BYTES for b in bodies)
    assert all(len(json.dumps(b)) <= 1024 * 1024 for b in bodies)
    texts = [e["text"] for b in bodies for e in b["entries"]]
    assert texts == [r.text for r in _requests(300, text_chars=8000)]
    assert [b["idempotency_key"] for b in bodies] == ["k~part1", "k~part2", "k~part3"]
    # Small entries: the entry count decides.
    many = remember_bodies("s", _requests(MAX_PART_ENTRIES * 2 + 1))
    assert [len(b["entries"]) for b in many] == [MAX_PART_ENTRIES, MAX_PART_ENTRIES, 1]


def test_unkeyed_parts_share_one_fresh_base_key() -> None:
    keys = [b["idempotency_key"] for b in remember_bodies("s", _requests(MAX_PART_ENTRIES + 1))]
    base = keys[0].removesuffix("~part1")
    assert keys == [f"{base}~part1", f"{base}~part2"] and len(base) == 32


def test_a_batch_with_expected_revision_is_never_split() -> None:
    assert len(remember_bodies("s", _requests(3, expected_revision=4))) == 1
    with pytest.raises(MemoryValidationError, match="expected_revision"):
        remember_bodies("s", _requests(MAX_PART_ENTRIES + 1, expected_revision=4))


def test_a_key_too_long_for_its_part_suffix_is_refused() -> None:
    assert part_key("k" * 256, 1, 1) == "k" * 256
    with pytest.raises(MemoryValidationError, match="at most 250 characters"):
        part_key("k" * 256, 1, 2)


def test_an_oversized_entry_travels_alone() -> None:
    parts = split_entries([{"text": "a"}, {"text": "b" * 50}, {"text": "c"}], max_bytes=30)
    assert [len(p) for p in parts] == [1, 1, 1]


def test_wire_calls_scale_their_timeout_per_part() -> None:
    calls = remember_many("s", _requests(MAX_PART_ENTRIES + 10))
    assert [c.entries for c in calls] == [MAX_PART_ENTRIES, 10]
    assert all(c.idempotent and c.path == "/v1/memory/remember" for c in calls)


def test_merged_result_names_the_last_revision_and_every_entry() -> None:
    first = MemoryWriteResult(
        memory_ref=MemoryRef(scope_id="s", revision=3), entries=(), vectors_pending=2
    )
    last = MemoryWriteResult(
        memory_ref=MemoryRef(scope_id="s", revision=4), entries=(), vectors_pending=1
    )
    merged = merge_results([first, last])
    assert merged.memory_ref.revision == 4 and merged.vectors_pending == 3
