"""How `remember_many` travels: one JSON request when the batch is small, else JSON lines.

The server refuses a JSON remember body above POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES
(1 MiB by default) before reading it: parsing one large JSON document holds the GIL and would
stall every other client. A batch above `MAX_JSON_BYTES` of entries or `MAX_JSON_ENTRIES`
entries therefore goes to POST /v1/memory/remember/stream, one entry per line, which the server
parses as it arrives. Either way the batch is one call and one revision, all or nothing, with
its `expected_revision` and one idempotency key (drawn once per call when none is given, so a
retry after a lost answer is answered with the original result instead of writing twice).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.models import RememberMemoryRequest

MAX_JSON_BYTES = 1_000_000
"""Entries' JSON in one JSON request: 1 MiB (the server's default) less room for the envelope
(scope id, idempotency key, expected revision)."""
MAX_JSON_ENTRIES = 250
"""Beyond this many entries the line route is used whatever their size: it bounds the work
the server does while parsing one JSON body."""

_BATCH_LEVEL = {"expected_revision", "idempotency_key"}


@dataclass(frozen=True, slots=True)
class BatchBody:
    """One `remember_many` request: `json` for the JSON route, else `lines` (JSON lines) for
    the stream route with `query` as its query parameters."""

    entries: int
    json: dict[str, Any] | None = None
    lines: bytes | None = None
    query: dict[str, str] | None = None


def entry_json(request: RememberMemoryRequest) -> dict[str, Any]:
    return request.model_dump(mode="json", exclude=_BATCH_LEVEL, exclude_none=True)


def _fits_json(entries: Sequence[dict[str, Any]]) -> bool:
    if len(entries) > MAX_JSON_ENTRIES:
        return False
    # json.dumps' defaults (spaces, ASCII escapes) never encode shorter than httpx does.
    return sum(len(json.dumps(entry)) + 2 for entry in entries) <= MAX_JSON_BYTES


def remember_body(scope_id: str, requests: Sequence[RememberMemoryRequest]) -> BatchBody:
    """The one request of a `remember_many` call."""
    if not requests:
        raise MemoryValidationError("remember_many needs at least one entry")
    if len({r.expected_revision for r in requests}) > 1:
        raise MemoryValidationError("entries of one batch must share one expected_revision")
    if len({r.idempotency_key for r in requests}) > 1:
        raise MemoryValidationError("entries of one batch must share one idempotency_key")
    expected = requests[0].expected_revision
    key = requests[0].idempotency_key or uuid.uuid4().hex
    entries = [entry_json(r) for r in requests]
    if _fits_json(entries):
        body: dict[str, Any] = {"scope_id": scope_id, "entries": entries, "idempotency_key": key}
        if expected is not None:
            body["expected_revision"] = expected
        return BatchBody(len(entries), json=body)
    query = {"scope_id": scope_id, "idempotency_key": key}
    if expected is not None:
        query["expected_revision"] = str(expected)
    lines = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
    return BatchBody(len(entries), lines=lines.encode("utf-8"), query=query)
