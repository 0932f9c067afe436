"""The HTTP v1 wire models: the source of `openapi/powercontext.yaml`.

Request fields reuse the Memory core's validated types, so the bounds the server enforces are
the runtime's own. Response models mirror the runtime's models field for field (the SDK parses
them back into `powercontext.memory` models), except that a search hit nests its citation and
a search response carries the rerank trace only redacted, and only when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
)
from pydantic_core import PydanticCustomError

from powercontext.memory.filters import MemoryFilter
from powercontext.memory.values import (
    MAX_KIND_CHARS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_REASON_CHARS,
    MAX_REVISION,
    MAX_TEXT_BYTES,
    ChangeOp,
    EntryText,
    IdempotencyKey,
    Kind,
    Metadata,
    OccurredAt,
    QueryText,
    Reason,
    ScopeId,
    Thread,
)

MAX_ID_CHARS = 128
MAX_CURSOR_CHARS = 256
MAX_WIRE_BATCH_ENTRIES = 1_000
"""Entries of one remember request. Within the 1 MiB write body a client could send ~70k tiny
entries, whose validation holds the GIL: 7.7 s of stalled server on this machine under load
(bench/keyless_body.py --mode keyed --megabytes 1 --text-chars 1); refused at 1,000, about
0.1 s. About 1 KiB per entry at the body limit; the SDK sends at most 250 per request."""

# What the wire's strings must be, spelled for the OpenAPI document. The server's own checks
# (memory.models) strip Python whitespace, which is not ECMAScript's `\s` (it adds
# U+001C..U+001F and U+0085, lacks U+FEFF), so the class is written out: a client validating
# against the document accepts exactly what the server accepts.
_SPACE = (
    "\\t\\n\\x0b\\x0c\\r \\x1c-\\x1f\\x85\\xa0\\u1680\\u2000-\\u200a"
    "\\u2028\\u2029\\u202f\\u205f\\u3000"
)
NO_NUL_PATTERN = "^[^\\x00]*$"
NON_BLANK_PATTERN = f"^[^\\x00]*[^\\x00{_SPACE}][^\\x00]*$"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


def _non_blank_schema() -> Any:
    return Field(json_schema_extra={"pattern": NON_BLANK_PATTERN})


NoNul = Annotated[
    str, AfterValidator(_no_nul), Field(json_schema_extra={"pattern": NO_NUL_PATTERN})
]
"""Ids, cursors and reasons: any text without NUL (PostgreSQL cannot store one; SQLite can)."""


# The length bounds come before the validator: after it pydantic reports a long string as
# "at most 256 items".
CursorText = Annotated[
    str,
    Field(max_length=MAX_CURSOR_CHARS),
    AfterValidator(_no_nul),
    Field(json_schema_extra={"pattern": NO_NUL_PATTERN}),
]
EntryIdText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_ID_CHARS),
    AfterValidator(_no_nul),
    Field(json_schema_extra={"pattern": NO_NUL_PATTERN}),
]


WireScopeId = Annotated[ScopeId, _non_blank_schema()]
WireEntryText = Annotated[EntryText, _non_blank_schema()]
WireQueryText = Annotated[QueryText, _non_blank_schema()]
WireKind = Annotated[Kind, _non_blank_schema()]
WireThread = Annotated[Thread, _non_blank_schema()]
WireReason = Annotated[
    Reason, AfterValidator(_no_nul), Field(json_schema_extra={"pattern": NO_NUL_PATTERN})
]


def _json_integer(value: Any) -> Any:
    # JSON has one number type, so JSON Schema (and the OpenAPI contract) counts 5.0 as the
    # integer 5; a boolean (`false` is not 0 here), a string or 5.5 is no integer.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise PydanticCustomError(
                "int_from_float", "Input should be a valid integer, got a fractional number"
            )
        return int(value)
    return value


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
"""An integer field of a request body, exactly as JSON Schema reads `type: integer`."""


def _int_field(default: Any = ..., *, ge: int, le: int = MAX_REVISION, description: str) -> Any:
    """The bounds of a `JsonInt` field."""
    return Field(default, ge=ge, le=le, description=description)


AsOfRevision = Annotated[int, Field(ge=1, le=MAX_REVISION), BeforeValidator(_json_integer)] | None
"""The revision a read is answered at, a `JsonInt` (null: the head)."""
MinScore = Annotated[float | None, Field(allow_inf_nan=False, strict=True)]
"""The full-text floor on the raw BM25 score: a finite JSON number (not a boolean or a string),
compared with `explain`."""
MinSimilarity = Annotated[float | None, Field(ge=-1.0, le=1.0, strict=True, allow_inf_nan=False)]
"""The vector floor on cosine similarity, a JSON number within [-1, 1]."""


ErrorCode = Literal[
    "validation_error",
    "invalid_cursor",
    "capability_not_supported",
    "revision_conflict",
    "idempotency_conflict",
    "not_found",
    "erased",
    "unauthorized",
    "forbidden",
    "payload_too_large",
    "inference_timeout",
    "inference_unavailable",
    "inference_invalid_output",
    "storage_unavailable",
    "bad_request",
    "method_not_allowed",
    "internal_error",
]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_SCOPE = (
    "The scope (a tenant, project or agent) whose Memory the request uses: 1-256 characters, "
    "not blank, no NUL. With auth enabled the API key must be allowed this scope (else 403)."
)
_TEXT = (
    f"Entry text, stored NFC-normalized and stripped; not blank; at most {MAX_TEXT_BYTES} "
    "UTF-8 bytes once leading and trailing whitespace is stripped (422 beyond); no NUL or lone "
    "surrogates."
)


def stripped_text_field(limit: int, description: str, **field: Any) -> Any:
    """A text whose length rule is the runtime's: UTF-8 bytes of the NFC-normalized, stripped
    value (values.py). A pydantic `max_length` would count characters before stripping and
    refuse padded text the runtime takes; the contract still publishes `maxLength`, a bound no
    stripped text within the byte limit exceeds. `minLength` alike: an empty text gets the
    runtime's "must not be blank", as a blank one does."""
    return Field(
        json_schema_extra={"maxLength": limit, "minLength": 1}, description=description, **field
    )


_KIND = f"A short label for the entry (e.g. `fact`, `preference`); at most {MAX_KIND_CHARS} chars."
_METADATA = (
    f"Any JSON object, returned unchanged; at most {MAX_METADATA_BYTES} bytes as JSON and "
    f"{MAX_METADATA_DEPTH} levels of arrays and objects (422)."
)
_EXPECTED = (
    "Compare-and-swap: the scope head revision the write expects (0 for an empty scope). "
    "When the head moved, the write is refused with 409 revision_conflict. Omit to write at "
    "whatever the head is."
)
_REASON = f"Why the change was made; recorded in the change log. At most {MAX_REASON_CHARS} chars."


def _scope_field() -> Any:
    return Field(description=_SCOPE)


ExpectedRevision = (
    Annotated[int, Field(ge=0, le=MAX_REVISION), BeforeValidator(_json_integer)] | None
)
"""A write's compare-and-swap revision, a `JsonInt` (0: an empty scope; null: any head)."""


def _expected_field() -> Any:
    return Field(None, description=_EXPECTED)


def _reason_field() -> Any:
    return Field(default=None, description=_REASON)


_IDEMPOTENCY = (
    "A client-chosen key (1-256 chars, no NUL), recorded in the write's own transaction. A "
    "retry with the same key and body returns the original result and writes nothing; the "
    "same key with another body answers 409 idempotency_conflict. Once an entry the write "
    "made or changed is forgotten, any retry with the key answers 410 erased. Keys are per "
    "scope."
)
WireIdempotencyKey = Annotated[IdempotencyKey, _non_blank_schema()]


def _idempotency_field() -> Any:
    return Field(default=None, description=_IDEMPOTENCY)


# ---- shared ---------------------------------------------------------------------------------


class MemoryRefModel(_Wire):
    """One exact revision of one scope's Memory."""

    scope_id: WireScopeId = Field(description="The scope this revision belongs to.")
    revision: JsonInt = _int_field(
        ge=1, description="The scope's revision number, from 1, increasing."
    )


class CitationModel(_Wire):
    """Names one immutable entry version as seen at one revision; `get` resolves it forever."""

    memory_ref: MemoryRefModel = Field(description="The revision at which the entry was seen.")
    entry_id: NoNul = Field(
        min_length=1, max_length=MAX_ID_CHARS, description="The entry (stable across versions)."
    )
    entry_version_id: NoNul = Field(
        min_length=1, max_length=MAX_ID_CHARS, description="The exact, immutable entry version."
    )


# ---- requests -------------------------------------------------------------------------------


class RememberEntryModel(_Wire):
    """One entry of a batch."""

    kind: WireKind = Field(default="fact", description=_KIND)
    text: WireEntryText = stripped_text_field(MAX_TEXT_BYTES, _TEXT)
    metadata: Metadata = Field(default_factory=dict, description=_METADATA)
    reason: WireReason | None = _reason_field()
    thread: WireThread | None = Field(
        default=None,
        description=(
            "The conversation, session or document the entry belongs to (at most 256 "
            "characters). Entries of one thread are indexed with their neighbours in write "
            "order, whether written in one batch or one call at a time."
        ),
    )
    occurred_at: OccurredAt | None = Field(
        default=None,
        description=(
            "When the remembered event happened: an ISO 8601 string (a time without offset "
            "is UTC; a number is refused, never read as Unix seconds). "
            "Default: the write time. The date is indexed, so searches by date find it."
        ),
    )


class RememberOneRequest(RememberEntryModel):
    """Remember one entry; creates one revision. Remember bodies are limited to
    POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES (default 1 MiB; 413 beyond)."""

    scope_id: WireScopeId = _scope_field()
    expected_revision: ExpectedRevision = _expected_field()
    idempotency_key: WireIdempotencyKey | None = _idempotency_field()


class RememberBatchRequest(_Wire):
    """Remember many entries in one revision (all or nothing)."""

    scope_id: WireScopeId = _scope_field()
    entries: list[RememberEntryModel] = Field(
        min_length=1,
        max_length=MAX_WIRE_BATCH_ENTRIES,
        description=(
            f"The entries, written in this order in one revision. At most "
            f"{MAX_WIRE_BATCH_ENTRIES} per request (422 beyond), and at most "
            "POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_ENTRIES when that is set lower "
            "(413 payload_too_large beyond), within the remember body limit "
            "POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES (default 1 MiB; 413 decided from "
            "Content-Length before the body is read). Larger batches are split into several "
            "requests (the SDK's remember_many does, one revision per part)."
        ),
    )
    expected_revision: ExpectedRevision = _expected_field()
    idempotency_key: WireIdempotencyKey | None = _idempotency_field()


_UNION_TAGS = frozenset({"entry", "batch"})
"""The tags of the tagged unions below: validation puts them in an error's location."""


def _remember_shape(body: Any) -> str:
    # A body with `entries` is a batch: its errors then name the batch's fields only, never
    # "text: Field required" for a batch whose third entry has a bad date.
    if isinstance(body, dict):
        return "batch" if "entries" in body else "entry"
    return "batch" if isinstance(body, RememberBatchRequest) else "entry"


RememberRequest = Annotated[
    Annotated[RememberOneRequest, Tag("entry")] | Annotated[RememberBatchRequest, Tag("batch")],
    Discriminator(_remember_shape),
]
"""One entry, or a batch written in one revision (one HTTP route, two MCP tools)."""


def error_location(loc: Sequence[int | str]) -> list[str]:
    """A validation error's location as the client wrote the body: without the union tag
    that says which shape the body was read as (the shape follows from the body)."""
    parts = [str(part) for part in loc]
    at = 1 if parts[:1] == ["body"] else 0
    if len(parts) > at and parts[at] in _UNION_TAGS:
        del parts[at]
    return parts


class ListEntriesRequest(_Wire):
    """Page through the entries active at one revision, oldest first."""

    scope_id: WireScopeId = _scope_field()
    revision: AsOfRevision = Field(
        default=None, description="The revision to list (default the head); 404 if unknown."
    )
    cursor: CursorText | None = Field(
        default=None,
        description="`next_cursor` of the previous page, passed exactly as received: opaque "
        "and bound to this scope and revision (422 invalid_cursor otherwise).",
    )
    limit: JsonInt = _int_field(100, ge=1, le=1000, description="Entries per page.")
    filter: MemoryFilter | None = Field(
        default=None, description="Only entries matching it (see the search request)."
    )


class GetEntryRequest(_Wire):
    """Resolve a citation to its exact entry version (404 when it names nothing here)."""

    scope_id: WireScopeId = _scope_field()
    citation: CitationModel = Field(description="A citation from search, list or a write.")


class ReviseEntryRequest(_Wire):
    """Replace an entry's text (and optionally kind and metadata) with a new version."""

    scope_id: WireScopeId = _scope_field()
    citation: CitationModel = Field(
        description="Must name the entry's current version (409 if it names an older one)."
    )
    text: WireEntryText = stripped_text_field(MAX_TEXT_BYTES, _TEXT)
    kind: WireKind | None = Field(default=None, description=_KIND + " Default: unchanged.")
    metadata: Metadata | None = Field(default=None, description=_METADATA + " Default: unchanged.")
    reason: WireReason | None = _reason_field()
    expected_revision: ExpectedRevision = _expected_field()
    idempotency_key: WireIdempotencyKey | None = _idempotency_field()


class RetireEntryRequest(_Wire):
    """Retire (soft-delete) an entry: later revisions no longer find it; citations still resolve."""

    scope_id: WireScopeId = _scope_field()
    citation: CitationModel = Field(description="Must name the entry's current version.")
    reason: WireReason | None = _reason_field()
    expected_revision: ExpectedRevision = _expected_field()
    idempotency_key: WireIdempotencyKey | None = _idempotency_field()


class ReactivateEntryRequest(RetireEntryRequest):
    """Bring a retired entry back as a new version."""


class ChangesRequest(_Wire):
    """The change log of a scope after a revision, oldest first."""

    scope_id: WireScopeId = _scope_field()
    since_revision: JsonInt = _int_field(
        0, ge=0, description="Return changes of revisions after this one."
    )
    limit: JsonInt = _int_field(
        1000,
        ge=1,
        le=10_000,
        description=(
            "Changes to return, in whole revisions: a page never splits a revision, so when "
            "the first revision after `since_revision` holds more than `limit` changes (a "
            "batch write), the page holds all of them."
        ),
    )


class HeadRequest(_Wire):
    """The scope's current head revision."""

    scope_id: WireScopeId = _scope_field()


# ---- responses ------------------------------------------------------------------------------


class EntryModel(_Wire):
    """One immutable entry version."""

    citation: CitationModel = Field(description="Cites this version at the response's revision.")
    entry_id: str = Field(description="The entry.")
    entry_version_id: str = Field(description="This version.")
    version: int = Field(ge=1, description="1 for the first version, +1 per revise/reactivate.")
    kind: str = Field(description="The entry's kind.")
    text: str = Field(description="The entry's text.")
    metadata: dict[str, Any] = Field(description="The entry's metadata.")
    created_at: datetime = Field(description="When this version was written (UTC).")
    active: bool = Field(description="False once the entry is retired or revised.")
    thread: str | None = Field(default=None, description="The thread the entry belongs to.")
    occurred_at: datetime | None = Field(
        default=None, description="When the event happened: as written, else the write time."
    )


class WriteResultModel(_Wire):
    """The revision a write created and the entry versions it wrote."""

    memory_ref: MemoryRefModel = Field(description="The new head revision.")
    entries: list[EntryModel] = Field(description="The versions written (none for retire).")
    vectors_pending: int = Field(
        ge=0,
        description=(
            "Entries whose embedding failed after the commit; their text is stored and "
            "`powercontext reindex` embeds them. Until then `auto` searches use fts."
        ),
    )


class EntriesPageModel(_Wire):
    memory_ref: MemoryRefModel | None = Field(
        description="The listed revision; null for an empty scope."
    )
    entries: list[EntryModel] = Field(description="Active entries, oldest first.")
    next_cursor: str | None = Field(default=None, description="Pass to get the next page.")


class ChangeModel(_Wire):
    revision: int = Field(description="The revision the change belongs to.")
    op: ChangeOp = Field(
        description="add, revise, retire, reactivate, or forget (an erasure: the version named "
        "is gone, only its ids remain)."
    )
    entry_id: str = Field(description="The entry changed.")
    entry_version_id: str = Field(description="The version written (or retired, for retire).")
    previous_entry_version_id: str | None = Field(
        default=None, description="The version it replaced."
    )
    reason: str | None = Field(default=None, description="The reason given by the writer.")
    created_at: datetime = Field(description="When the revision was committed (UTC).")
    actor: str | None = Field(
        default=None,
        description="Who erased (forget changes): `key:<sha256 prefix>` of the API key, "
        "`local` for the embedded runtime or CLI, null when auth is off.",
    )


class ChangesPageModel(_Wire):
    memory_ref: MemoryRefModel | None = Field(description="The head; null for an empty scope.")
    changes: list[ChangeModel] = Field(
        description="Changes after `since_revision`, oldest first, whole revisions (see `limit`)."
    )
    next_since_revision: int = Field(description="Pass as `since_revision` to continue.")


class HeadResponse(_Wire):
    memory_ref: MemoryRefModel | None = Field(description="The head; null for an empty scope.")


class HealthResponse(_Wire):
    status: Literal["ok"] = Field(description="Always `ok` while the process serves requests.")
    version: str = Field(description="The PowerContext version.")


class ReadinessCheck(_Wire):
    ok: bool = Field(description="Whether this dependency is usable.")
    detail: str = Field(description="What was checked, or why it failed (no secrets).")


class ReadyResponse(_Wire):
    status: Literal["ready", "not_ready"] = Field(description="`ready` when every check is ok.")
    checks: dict[str, ReadinessCheck] = Field(
        description="`database`, `embedding_model`, `memory_reranker`, `vectors` and "
        "`index_profile` (stale scopes are reported, never fatal)."
    )
    vectors_pending: int = Field(
        default=0,
        ge=0,
        description="Active entries without a vector of the current embedding profile (a crash "
        "or a provider failure after a text commit), as last counted by the background "
        "backfill. While it is above 0 the scopes concerned serve `auto` as fts and refuse "
        "`vector`/`hybrid`; it does not make the server not ready: full-text search and "
        "writes work.",
    )


class ErrorBody(_Wire):
    code: ErrorCode = Field(description="Stable machine-readable error code.")
    message: str = Field(
        description="Human-readable explanation; never a trace, SQL or provider body."
    )
    details: dict[str, Any] = Field(
        description=(
            "Structured details: `errors` (loc, msg, type) for validation_error, "
            "`expected_revision`/`actual_revision` for revision_conflict, else empty."
        )
    )


class ErrorEnvelope(_Wire):
    """Every non-2xx response (except a not-ready /v1/ready) has this body."""

    error: ErrorBody
