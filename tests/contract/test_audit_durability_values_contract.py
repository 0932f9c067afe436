"""Contract: values a user keeps for years come back exactly, on every backend.

Text at the documented maximum, emoji, right-to-left and astral text, metadata with nested
JSON, integers past 64 bits and extreme floats, and `occurred_at` at the ends of the
calendar and with offsets all round-trip unchanged, and full-text search finds them.

What no backend can hold is refused at the boundary with a clear error: one byte over the
text bound, and lone surrogates (which UTF-8 cannot encode). Past the request models, a
caller of the port gets a MemoryValidationError for a write and "nothing found" for a
lookup, as for NUL (test_nul_parity_contract.py); before, both stores let the driver's
UnicodeEncodeError escape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.ports import (
    CommitRequest,
    ErasureRequest,
    MemoryStore,
    PlannedChange,
    TombstoneQuery,
)
from powercontext.memory.service import MemoryService
from powercontext.memory.values import MAX_TEXT_BYTES

from .builders import add

SCOPE = "values"
LONE = "a\ud800b"

_TEXTS = {
    "maximum": "word " * (MAX_TEXT_BYTES // 5 - 1) + "endmark",
    "emoji": "family 👩‍👩‍👧‍👦 flag 🇺🇦 shrug 🤷🏽‍♀️ emojimark",
    "rtl": "שלום עולם مرحبا بالعالم \u202eoverride\u202c rtlmark",
    "astral": "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠀀 \U0010fffd astralmark",
    "controls": "tab\there\nnew line bell\x07 zero\u200bwidth controlmark",
}
_METADATA: dict[str, Any] = {
    "int64_max_plus_one": 2**63,
    "int64_min_minus_one": -(2**63) - 1,
    "huge": 2**200,
    "float_max": 1e308,
    "denormal": 5e-324,
    "negative_zero": -0.0,
    "nested": {"a": [1, {"b": [None, True, False, "ü", 1.5]}], "": "empty key"},
    "unicode": "👍 \u202e שלום",
}
_TIMES = [
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2020, 2, 29, 12, 0, tzinfo=timezone(timedelta(hours=14))),
    datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=timezone(timedelta(hours=-12, minutes=-30))),
    datetime(1, 1, 1, 23, 0, tzinfo=timezone(timedelta(hours=-1))),
]


async def test_unusual_values_round_trip_and_are_found(store: MemoryStore) -> None:
    assert len(_TEXTS["maximum"].encode()) <= MAX_TEXT_BYTES
    memory = MemoryService(store).for_scope(SCOPE)
    for (name, text), occurred in zip(_TEXTS.items(), _TIMES, strict=True):
        request = RememberMemoryRequest(text=text, metadata=_METADATA, occurred_at=occurred)
        written = (await memory.remember(request)).entries[0]
        read = await memory.get_entry(written.entry_id)
        assert read.text == request.text, name
        assert read.occurred_at == occurred.astimezone(UTC), name
        assert json.dumps(read.metadata, sort_keys=True) == json.dumps(_METADATA, sort_keys=True)
        assert math.copysign(1.0, read.metadata["negative_zero"]) == -1.0
        assert isinstance(read.metadata["huge"], int) and read.metadata["huge"] == 2**200
        mark = text.split()[-1]
        page = await memory.search(SearchMemoryRequest(query=mark, mode="fts", limit=3))
        assert [hit.entry_id for hit in page.hits] == [written.entry_id], name
        assert page.hits[0].text == request.text


def test_what_no_backend_holds_is_refused_by_the_request() -> None:
    RememberMemoryRequest(text="x" * MAX_TEXT_BYTES)
    with pytest.raises(ValidationError, match=f"at most {MAX_TEXT_BYTES}"):
        RememberMemoryRequest(text="x" * (MAX_TEXT_BYTES + 1))
    with pytest.raises(ValidationError, match="at most"):  # bytes, not characters
        RememberMemoryRequest(text="é" * (MAX_TEXT_BYTES // 2 + 1))
    # pydantic's own check comes first on fields with a length bound, in its own words.
    for field in ("text", "thread", "kind", "reason"):
        with pytest.raises(ValidationError, match=r"lone surrogates|unicode string"):
            RememberMemoryRequest(**{"text": "fine", field: LONE})
    with pytest.raises(ValidationError, match="lone surrogates"):
        RememberMemoryRequest(text="fine", metadata={"k": [LONE]})


_BAD_PLANS: dict[str, Callable[[], PlannedChange]] = {
    "text": lambda: add(LONE, tokens="a b"),
    "metadata value": lambda: add("plain text", metadata={"k": [{"deep": LONE}]}),
    "metadata key": lambda: add("plain text", metadata={LONE: 1}),
    "kind": lambda: add("plain text", kind=LONE),
    "thread": lambda: add("plain text", thread=LONE),
    "reason": lambda: add("plain text", reason=LONE),
    "entry_id": lambda: add("plain text", entry_id=LONE),
}


@pytest.mark.parametrize("field", sorted(_BAD_PLANS))
async def test_a_commit_holding_a_lone_surrogate_is_a_validation_error(
    store: MemoryStore, field: str
) -> None:
    first = await store.commit(CommitRequest(SCOPE, None, [add("kept entry")]))
    with pytest.raises(MemoryValidationError, match="lone surrogates"):
        await store.commit(CommitRequest(SCOPE, first.revision, [_BAD_PLANS[field]()]))
    assert await store.head(SCOPE) == first.revision
    after = await store.commit(CommitRequest(SCOPE, first.revision, [add("still writable")]))
    assert after.revision == first.revision + 1


@pytest.mark.parametrize("field", ["actor", "reason"])
async def test_an_erasure_recording_a_lone_surrogate_erases_nothing(
    store: MemoryStore, field: str
) -> None:
    first = await store.commit(CommitRequest(SCOPE, None, [add("kept entry")]))
    entry = (await store.fetch_versions(SCOPE, first.keys))[first.keys[0]]
    said: dict[str, Any] = {"actor": "ops", "reason": "asked", field: LONE}
    with pytest.raises(MemoryValidationError, match="lone surrogates"):
        await store.erase(ErasureRequest(SCOPE, 1, [entry.entry_id], **said))
    assert await store.get_version(SCOPE, entry.entry_version_id) == entry


async def test_a_lookup_by_an_id_holding_a_lone_surrogate_finds_nothing(
    store: MemoryStore,
) -> None:
    first = await store.commit(CommitRequest(SCOPE, None, [add("kept entry")]))
    entry = (await store.fetch_versions(SCOPE, first.keys))[first.keys[0]]
    for scope in (SCOPE, "never-written"):
        assert await store.get_version(scope, LONE) is None
        assert await store.latest_version(scope, LONE) is None
        assert await store.entry_versions(scope, LONE) == []
        assert await store.idempotent_write(scope, LONE) is None
        assert await store.tombstones(TombstoneQuery(scope, entry_version_id=LONE)) == []
        assert await store.tombstones(TombstoneQuery(scope, entry_ids=(LONE,))) == []
    # The other ids of one lookup are still found.
    heads = await store.entry_heads(SCOPE, [LONE, entry.entry_id])
    assert list(heads) == [entry.entry_id]
