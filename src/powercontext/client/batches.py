"""Large `remember_many` batches, written as several requests the server accepts.

The server refuses a remember body above POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES
(1 MiB by default) before reading it: parsing a large JSON body holds the GIL and would stall
every other client. So the SDK cuts a batch into parts of at most `MAX_PART_BYTES` of
entries and `MAX_PART_ENTRIES` entries, written in order, one revision per part.

What a split changes, and how it stays safe:
- Atomicity is per part: a failure after part 2 leaves parts 1 and 2 written. Each part
  carries the idempotency key `<key>~partN`, so calling again with the same key (or with
  none: a fresh base key is drawn once per call) re-sends every part, and the server answers
  the parts already written with their original result instead of writing them twice.
- A batch with `expected_revision` is refused instead of split: only the first part could be
  checked against it, so the all-or-nothing promise could not be kept.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.models import MemoryWriteResult, RememberMemoryRequest
from powercontext.memory.values import MAX_IDEMPOTENCY_KEY_CHARS

MAX_PART_BYTES = 1_000_000
"""Entries' JSON per request: 1 MiB (the server's default) less room for the envelope
(scope id, idempotency key, expected revision)."""
MAX_PART_ENTRIES = 250
"""Also bounds the server-side work (embedding, one transaction) per request."""

_BATCH_LEVEL = {"expected_revision", "idempotency_key"}


def entry_json(request: RememberMemoryRequest) -> dict[str, Any]:
    return request.model_dump(mode="json", exclude=_BATCH_LEVEL, exclude_none=True)


def _encoded_size(entry: dict[str, Any]) -> int:
    # json.dumps' defaults (spaces, ASCII escapes) never encode shorter than httpx does.
    return len(json.dumps(entry)) + 2  # and the ", " between entries


def split_entries(
    entries: Sequence[dict[str, Any]],
    max_bytes: int = MAX_PART_BYTES,
    max_entries: int = MAX_PART_ENTRIES,
) -> list[list[dict[str, Any]]]:
    """Consecutive parts, in order, each within both bounds (an entry larger than
    `max_bytes` on its own travels alone, and the server judges it)."""
    parts: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        grows = _encoded_size(entry)
        if current and (size + grows > max_bytes or len(current) >= max_entries):
            parts.append(current)
            current, size = [], 0
        current.append(entry)
        size += grows
    if current:
        parts.append(current)
    return parts


def part_key(key: str, index: int, parts: int) -> str:
    """The idempotency key of part `index` (1-based) of a batch sent as `parts` requests; the
    caller's key itself when the batch is not split."""
    if parts == 1:
        return key
    keyed = f"{key}~part{index}"
    if len(keyed) > MAX_IDEMPOTENCY_KEY_CHARS:
        room = MAX_IDEMPOTENCY_KEY_CHARS - len(f"~part{parts}")
        raise MemoryValidationError(
            f"this batch is sent in {parts} parts, keyed '<idempotency_key>~partN': "
            f"use an idempotency_key of at most {room} characters"
        )
    return keyed


def remember_bodies(
    scope_id: str, requests: Sequence[RememberMemoryRequest]
) -> list[dict[str, Any]]:
    """The request bodies of one `remember_many` call: one when the batch fits, else parts."""
    if not requests:
        raise MemoryValidationError("remember_many needs at least one entry")
    if len({r.expected_revision for r in requests}) > 1:
        raise MemoryValidationError("entries of one batch must share one expected_revision")
    if len({r.idempotency_key for r in requests}) > 1:
        raise MemoryValidationError("entries of one batch must share one idempotency_key")
    expected = requests[0].expected_revision
    key = requests[0].idempotency_key or uuid.uuid4().hex
    parts = split_entries([entry_json(r) for r in requests])
    if len(parts) > 1 and expected is not None:
        raise MemoryValidationError(
            f"a batch with expected_revision is written in one request (all or nothing), and "
            f"this one needs {len(parts)}: send at most {MAX_PART_ENTRIES} entries and "
            f"{MAX_PART_BYTES} bytes of entries per call, or drop expected_revision to let the "
            "SDK split it (one revision per part)"
        )
    bodies = []
    for index, entries in enumerate(parts, start=1):
        body: dict[str, Any] = {
            "scope_id": scope_id,
            "entries": entries,
            "idempotency_key": part_key(key, index, len(parts)),
        }
        if expected is not None:
            body["expected_revision"] = expected
        bodies.append(body)
    return bodies


def merge_results(results: Sequence[MemoryWriteResult]) -> MemoryWriteResult:
    """One result for a split batch: the last part's revision, every entry in order."""
    return MemoryWriteResult(
        memory_ref=results[-1].memory_ref,
        entries=tuple(entry for result in results for entry in result.entries),
        vectors_pending=sum(result.vectors_pending for result in results),
    )
