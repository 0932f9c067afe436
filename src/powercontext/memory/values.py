"""The value types of Memory's models: bounds, literals and the validated strings, times and
metadata every request and entry is built from (memory.models), and filters too
(memory.filters).

What a value may be is decided here once: the runtime, the HTTP wire models and the SDK all
validate through these types.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from powercontext.memory.iso_time import iso_8601_only

MAX_TEXT_BYTES = 8192
MAX_QUERY_BYTES = 8192
MAX_METADATA_BYTES = 16384
MAX_KIND_CHARS = 64
MAX_SCOPE_CHARS = 256
MAX_REASON_CHARS = 1024
MAX_THREAD_CHARS = 256
MAX_ENTRY_ID_CHARS = 128
MAX_REVISION = 2**63 - 1
"""The largest revision either backend stores (a signed 64-bit integer); the wire's too."""
MAX_METADATA_DEPTH = 100
"""Levels of arrays and objects in metadata, the metadata object being the first. JSON
parsers admit about 1,000, but pydantic serializes at most 255 levels: a deeper entry was
written, and then every list, search and export that met it failed."""

SearchMode = Literal["auto", "fts", "vector", "hybrid"]
ResolvedMode = Literal["fts", "vector", "hybrid"]
Channel = Literal["fts", "vector"]
ChangeOp = Literal["add", "revise", "retire", "reactivate", "forget"]
"""`forget` is the audit record of an erasure: the version it names is gone, only its ids stay."""
RerankStatus = Literal[
    "applied",
    "fallback_no_valid_rank",
    "degraded_provider_error",
    "degraded_invalid_output",
    "disabled",
]
"""What the rerank stage did: reranked, fell back (RFC: no valid rank), served the coarse order
after a provider failure or invalid output (fail-open only), or made no rerank call at all."""
DegradedCause = Literal["provider_error", "invalid_output"]
"""Why a fail-open rerank served the coarse order: no answer in time, or an unusable one."""


def normalize_text(value: str) -> str:
    """NFC and strip: the one canonical form of stored text and of queries."""
    return unicodedata.normalize("NFC", value).strip()


def check_unicode(value: str, what: str) -> str:
    """`value` itself, when it is valid Unicode without NUL (what both stores can hold)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} must be valid Unicode (no lone surrogates)") from exc
    if "\x00" in value:
        raise ValueError(f"{what} must not contain NUL characters")
    return value


def _bounded_text(what: str, max_bytes: int) -> Any:
    def check(value: str) -> str:
        value = normalize_text(check_unicode(value, what))
        if not value:
            raise ValueError(f"{what} must not be blank")
        size = len(value.encode("utf-8"))
        if size > max_bytes:
            raise ValueError(f"{what} is {size} UTF-8 bytes; at most {max_bytes} are allowed")
        return value

    return AfterValidator(check)


def _check_scope(value: str) -> str:
    check_unicode(value, "scope_id")
    if not value.strip():
        raise ValueError("scope_id must not be blank")
    return value


def _check_json_strings(value: object, what: str) -> None:
    """Every key and string of a JSON value, checked one by one: JSON text escapes NUL as
    `\\u0000`, so the encoded whole would never show one."""
    if isinstance(value, str):
        check_unicode(value, what)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                check_unicode(key, f"{what} keys")
            _check_json_strings(item, what)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_json_strings(item, what)


def _shallow(value: Any) -> Any:
    # Before the checks that walk the value recursively: level by level, so a deep value
    # needs no deep stack.
    if not isinstance(value, dict):
        return value  # the dict validation names what it is instead
    level: list[Any] = [value]
    for _ in range(MAX_METADATA_DEPTH):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
        if not level:
            return value
    raise ValueError(
        f"metadata nests arrays and objects more than {MAX_METADATA_DEPTH} levels deep"
    )


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata must be a JSON object: {exc}") from exc
    _check_json_strings(value, "metadata")
    size = len(encoded.encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(
            f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES} are allowed"
        )
    return value


def _check_kind(value: str) -> str:
    value = normalize_text(check_unicode(value, "kind"))
    if not value:
        raise ValueError("kind must not be blank")
    return value


ScopeId = Annotated[
    str, Field(min_length=1, max_length=MAX_SCOPE_CHARS), AfterValidator(_check_scope)
]
EntryText = Annotated[str, _bounded_text("text", MAX_TEXT_BYTES)]
QueryText = Annotated[str, _bounded_text("query", MAX_QUERY_BYTES)]
Kind = Annotated[str, Field(max_length=MAX_KIND_CHARS), AfterValidator(_check_kind)]


def _check_thread(value: str) -> str:
    value = normalize_text(check_unicode(value, "thread"))
    if not value:
        raise ValueError("thread must not be blank")
    return value


def _check_occurred_at(value: datetime) -> datetime:
    return as_utc(value, "occurred_at")


def as_utc(value: datetime, what: str) -> datetime:
    """`value` in UTC; a naive time is read as UTC, so every stored time compares with every
    other (a store compares them as text)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else in_utc(value, what)


def in_utc(value: datetime, what: str) -> datetime:
    """An aware time in UTC; a ValueError (a 422) when UTC has no such day, as for
    0001-01-01T00:00:00+14:00, where `astimezone` raises OverflowError."""
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError(f"{what} is outside the years 1-9999 once in UTC") from exc


Metadata = Annotated[dict[str, Any], BeforeValidator(_shallow), AfterValidator(_check_metadata)]
Thread = Annotated[str, Field(max_length=MAX_THREAD_CHARS), AfterValidator(_check_thread)]
"""The conversation, session or document an entry belongs to; neighbours are found by it."""
OccurredAt = Annotated[datetime, BeforeValidator(iso_8601_only), AfterValidator(_check_occurred_at)]
"""When the remembered event happened (UTC); defaults to the write time. A `datetime` or ISO
8601 text: a number is refused, not read as Unix seconds."""
Reason = Annotated[
    str,
    Field(max_length=MAX_REASON_CHARS),
    AfterValidator(lambda value: check_unicode(value, "reason")),
]
MAX_IDEMPOTENCY_KEY_CHARS = 256


def _check_idempotency_key(value: str) -> str:
    check_unicode(value, "idempotency_key")
    if not value.strip():
        raise ValueError("idempotency_key must not be blank")
    return value


IdempotencyKey = Annotated[
    str,
    Field(min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS),
    AfterValidator(_check_idempotency_key),
]
"""A client-chosen key: a retry with the same key and body returns the original result."""


def _check_entry_id_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("entry_id must not contain NUL characters")
    return value


LookupEntryId = Annotated[
    str,
    Field(min_length=1, max_length=MAX_ENTRY_ID_CHARS),
    AfterValidator(_check_entry_id_text),
]
"""An entry id a request names, as the wire takes it: 1-128 characters without NUL."""
