"""What every backend does the same way: plan checks, metadata encoding, version rows.

The backends differ in SQL dialect and driver, not in what a commit plan may say or in which
columns make a version, so these live here once and a new backend starts from them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from powercontext.memory.errors import MemoryValidationError, NotFoundError, RevisionConflictError
from powercontext.memory.models import MemoryChange
from powercontext.memory.ports import (
    ErasedVersion,
    ErasureRequest,
    IdempotencyClaim,
    IdempotentWrite,
    NewVersion,
    PlannedChange,
    StoredVersion,
    Tombstone,
    TombstoneQuery,
    Vector,
    VersionPage,
)
from powercontext.storage.filter_sql import Dialect, active_at, filter_sql, placeholder

_CARRIES_NEW = {"add": True, "revise": True, "reactivate": True, "retire": False}
_RETIRES = {"add": False, "revise": True, "reactivate": False, "retire": True}

NO_KEY = 2**63 - 1
"""Above every stored key (keys are 64-bit): the bound of a "key below" read given none."""

VERSION_COLUMNS = (
    "key, entry_id, entry_version_id, version, kind, text, metadata, created_at, "
    "added_revision, removed_revision, thread, occurred_at"
)
"""The columns `version_from_row` reads, in its order."""

CHANGE_COLUMNS = (
    "revision, op, entry_id, entry_version_id, previous_entry_version_id, reason, created_at, actor"
)
"""The columns `change_from_row` reads, in its order."""


def page_query(page: VersionPage, dialect: Dialect) -> tuple[str, tuple[object, ...]]:
    """The statement and parameters that read one `list_versions` page in `dialect`."""
    mark = placeholder(dialect)
    clause, params = filter_sql(page.where, dialect)
    after = -1 if page.after_key is None else page.after_key
    return (
        f"SELECT {VERSION_COLUMNS} FROM entry_versions WHERE scope_id = {mark} "
        f"AND key > {mark} AND {active_at(dialect)}{clause} ORDER BY key LIMIT {mark}",
        (page.scope_id, after, page.revision, page.revision, *params, page.limit),
    )


def validate_plan(changes: Sequence[PlannedChange]) -> None:
    """Shape checks that need no database; run before the transaction opens."""
    if not changes:
        raise MemoryValidationError("a commit needs at least one change")
    for index, change in enumerate(changes):
        if change.op not in _CARRIES_NEW:
            raise MemoryValidationError(f"change {index}: unknown op {change.op!r}")
        if _CARRIES_NEW[change.op] != (change.new is not None):
            raise MemoryValidationError(
                f"change {index}: op {change.op!r} "
                + ("needs a new version" if _CARRIES_NEW[change.op] else "takes no new version")
            )
        if _RETIRES[change.op] != (change.previous_entry_version_id is not None):
            raise MemoryValidationError(
                f"change {index}: op {change.op!r} "
                + ("needs" if _RETIRES[change.op] else "takes no")
                + " previous_entry_version_id"
            )
        if change.new is not None and change.new.version < 1:
            raise MemoryValidationError(f"change {index}: version must be >= 1")
        refuse_nul(f"change {index}: reason", change.reason)
        if change.new is not None:
            new = change.new
            for what, value in (
                ("entry_id", new.entry_id),
                ("entry_version_id", new.entry_version_id),
                ("kind", new.kind),
                ("text", new.text),
                ("thread", new.thread),
                ("metadata", new.metadata),
            ):
                refuse_nul(f"change {index}: {what}", value)


def refuse_nul(what: str, value: object) -> None:
    """Refuse NUL (U+0000) and lone surrogates in a string, or in a JSON value's keys and
    strings.

    PostgreSQL's text cannot hold NUL (and its jsonb, which metadata filters cast to, rejects
    the `\\u0000` escape), and the API refuses it in every string (docs/http.md). Refusing it
    here makes both stores answer alike, a validation error, where SQLite used to keep what
    PostgreSQL failed on (or kept metadata its filters then failed on, for the whole scope).
    A lone surrogate has no UTF-8 form, so neither driver can send it: it escaped as the
    driver's UnicodeEncodeError instead.
    """
    if isinstance(value, str):
        if "\x00" in value:
            raise MemoryValidationError(f"{what} must not contain NUL characters")
        if not encodable(value):
            raise MemoryValidationError(f"{what} must be valid Unicode (no lone surrogates)")
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_nul(f"{what} key", key)
            refuse_nul(what, item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            refuse_nul(what, item)


def encodable(value: str) -> bool:
    """Whether `value` has a UTF-8 form (no lone surrogates): what a driver can send."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def findable(params: Sequence[object]) -> bool:
    """Whether a lookup by these values can find a row: no stored string holds a lone
    surrogate, so such a lookup finds nothing rather than failing in the driver."""
    return all(encodable(value) for value in params if isinstance(value, str))


def query_array(query: Vector) -> npt.NDArray[np.float32]:
    """The query vector as float32, refused unless it is a finite 1-D array."""
    vector = np.asarray(query, dtype=np.float32)
    if vector.ndim != 1 or not np.all(np.isfinite(vector)):
        raise MemoryValidationError("the query vector must be a finite 1-D array")
    return vector


def version_fields(new: NewVersion) -> tuple[str, str, int, str, str, str]:
    """entry_id, entry_version_id, version, kind, text and encoded metadata: the columns of
    a new version both backends store alike."""
    return (
        new.entry_id,
        new.entry_version_id,
        new.version,
        new.kind,
        new.text,
        encode_metadata(new.metadata),
    )


def encode_metadata(metadata: dict[str, object]) -> str:
    """Compact JSON; NaN and non-JSON values are the caller's error, not a storage failure."""
    try:
        return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MemoryValidationError(f"metadata must be a JSON object: {exc}") from exc


def unit_vectors(items: Sequence[tuple[int, Vector]]) -> tuple[int, list[tuple[int, Vector]]]:
    """Checked unit float32 copies and their one dimension; a zero vector stays zero (it
    matches nothing). A vector that is not a finite, non-empty 1-D array is rejected."""
    dimension: int | None = None
    rows: list[tuple[int, Vector]] = []
    for key, vector in items:
        array = np.asarray(vector, dtype=np.float32)
        if array.ndim != 1 or array.shape[0] == 0:
            raise MemoryValidationError("a vector must be a non-empty 1-D array")
        if not np.all(np.isfinite(array)):
            raise MemoryValidationError(f"the vector of key {key} has NaN or infinite values")
        if dimension is not None and array.shape[0] != dimension:
            raise MemoryValidationError("vectors of one call must share one dimension")
        dimension = array.shape[0]
        norm = float(np.linalg.norm(array))
        rows.append((int(key), array / norm if norm > 0 else array.copy()))
    if dimension is None:
        raise MemoryValidationError("no vectors given")
    return dimension, rows


def conflict(message: str, expected: int | None, actual: int | None) -> RevisionConflictError:
    return RevisionConflictError(message, expected=expected, actual=actual)


def erasure_head(request: ErasureRequest, head: int | None) -> int:
    """The head an erasure builds on, read under the scope's write lock: refused when the scope
    has no revision or is not at the revision the request expects, or when what its forget
    records would say holds NUL (see `refuse_nul`)."""
    refuse_nul("actor", request.actor)
    refuse_nul("reason", request.reason)
    if head is None:
        raise NotFoundError(f"scope {request.scope_id!r} has no revision yet")
    if request.expected_head != head:
        raise conflict(
            f"scope {request.scope_id!r} is at revision {head}, "
            f"expected {request.expected_head or 0}",
            request.expected_head,
            head,
        )
    return head


def _same(value: Any) -> Any:
    return value


def version_from_row(
    row: Sequence[Any],
    *,
    metadata: Callable[[Any], dict[str, Any]] = _same,
    created_at: Callable[[Any], datetime] = _same,
) -> StoredVersion:
    """A row of VERSION_COLUMNS as a StoredVersion. SQLite hands back JSON and ISO text where
    PostgreSQL's driver already decodes them, hence the two converters."""
    return StoredVersion(
        key=int(row[0]),
        entry_id=row[1],
        entry_version_id=row[2],
        version=int(row[3]),
        kind=row[4],
        text=row[5],
        metadata=metadata(row[6]),
        created_at=created_at(row[7]),
        added_revision=int(row[8]),
        removed_revision=None if row[9] is None else int(row[9]),
        thread=row[10],
        occurred_at=None if row[11] is None else created_at(row[11]),
    )


def change_from_row(
    row: Sequence[Any], *, created_at: Callable[[Any], datetime] = _same
) -> MemoryChange:
    """A row of CHANGE_COLUMNS as a MemoryChange (SQLite hands `created_at` back as ISO text)."""
    return MemoryChange(
        revision=row[0],
        op=row[1],
        entry_id=row[2],
        entry_version_id=row[3],
        previous_entry_version_id=row[4],
        reason=row[5],
        created_at=created_at(row[6]),
        actor=row[7],
    )


def whole_revisions(rows: Sequence[Sequence[Any]], limit: int) -> tuple[list[Any], int | None]:
    """Change rows fetched in revision order with `LIMIT limit + 1`, cut so that a page never
    splits a revision (a reader resumes from the last revision it saw). Returns the kept rows
    and, when the first revision alone has more than `limit` changes (nothing kept), that
    revision: the caller then fetches it whole."""
    if len(rows) <= limit:
        return list(rows), None
    cut = rows[limit][0]
    kept = [row for row in rows if row[0] < cut]
    return kept, None if kept else int(cut)


ERASED_COLUMNS = (
    "key, entry_id, entry_version_id, version, added_revision, removed_revision, thread"
)
"""The columns an erasure reads of each version it deletes, in `ErasedRow` order."""
ErasedRow = tuple[int, str, str, int, int, int | None, str | None]


def erased_active_counts(rows: Sequence[ErasedRow], head: int) -> dict[int, int]:
    """How many of the erased versions were active at each revision up to `head` (revisions
    with none are left out): each revision's stored active count drops by that much, so
    counts at older revisions match what an as-of read now finds."""
    delta = [0] * (head + 2)
    for row in rows:
        added, removed = row[4], row[5]
        delta[added] += 1
        delta[min(removed if removed is not None else head + 1, head + 1)] -= 1
    counts: dict[int, int] = {}
    running = 0
    for revision in range(1, head + 1):
        running += delta[revision]
        if running:
            counts[revision] = running
    return counts


def erased_version(row: ErasedRow) -> ErasedVersion:
    return ErasedVersion(
        key=int(row[0]),
        entry_id=row[1],
        entry_version_id=row[2],
        version=int(row[3]),
        added_revision=int(row[4]),
        thread=row[6],
    )


def erasure_records(
    request: ErasureRequest,
    doomed: Sequence[ErasedRow],
    revision: int,
    erased_at: Any,
    dialect: Dialect,
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The inserts (statement and rows, in `dialect`) that record an erasure: a tombstone for
    each erased version, one forget change for each, and the request's idempotency key."""
    scope_id, actor = request.scope_id, request.actor
    tombstones = [(scope_id, r[2], r[1], r[3], revision, erased_at, actor) for r in doomed]
    changes = [
        (scope_id, revision, seq, r[1], r[2], request.reason, erased_at, actor)
        for seq, r in enumerate(doomed, start=1)
    ]
    statements: list[tuple[str, list[tuple[Any, ...]]]] = [
        (
            "INSERT INTO erased_versions (scope_id, entry_version_id, entry_id, version, "
            "erased_revision, erased_at, actor) VALUES (?, ?, ?, ?, ?, ?, ?)",
            tombstones,
        ),
        (
            "INSERT INTO changes (scope_id, revision, seq, op, entry_id, entry_version_id, "
            "previous_entry_version_id, reason, created_at, actor) "
            "VALUES (?, ?, ?, 'forget', ?, ?, NULL, ?, ?, ?)",
            changes,
        ),
    ]
    converted = [(sql.replace("?", placeholder(dialect)), rows) for sql, rows in statements]
    return converted + erasure_key_record(request, revision, dialect)


def erasure_key_record(
    request: ErasureRequest, revision: int, dialect: Dialect, keys: Sequence[int] = ()
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The insert (if the request carries an idempotency key) that records an erasure's key
    at `revision`: the revision it made, or with NOTHING_ERASED the head it found nothing at."""
    if request.idempotency is None:
        return []
    sql, params = idempotency_record(request.scope_id, request.idempotency, revision, keys, dialect)
    return [(sql, [params])]


def idempotency_record(
    scope_id: str, claim: IdempotencyClaim, revision: int, keys: Sequence[int], dialect: Dialect
) -> tuple[str, tuple[Any, ...]]:
    """The insert that records a write's idempotency key with the revision it made and the
    keys of the versions it wrote (a commit's, or an erasure's), in `dialect`."""
    # SQLite keeps the keys as JSON text, PostgreSQL as a bigint array.
    encoded: Any = json.dumps(list(keys)) if dialect == "sqlite" else list(keys)
    mark = placeholder(dialect)
    sql = (
        "INSERT INTO idempotency_keys (scope_id, idempotency_key, body_hash, revision, "
        f"version_keys) VALUES ({mark}, {mark}, {mark}, {mark}, {mark})"
    )
    return sql, (scope_id, claim.key, claim.body_hash, revision, encoded)


def idempotency_query(scope_id: str, key: str, dialect: Dialect) -> tuple[str, tuple[str, str]]:
    """The query for what a write recorded under an idempotency key; see `idempotent_write`."""
    mark = placeholder(dialect)
    return (
        "SELECT body_hash, revision, version_keys FROM idempotency_keys "
        f"WHERE scope_id = {mark} AND idempotency_key = {mark}",
        (scope_id, key),
    )


def idempotent_write_from_row(
    row: Sequence[Any] | None, keys: Callable[[Any], Sequence[int]] = _same
) -> IdempotentWrite | None:
    """A row of `idempotency_query` as an IdempotentWrite (SQLite stores the keys as JSON)."""
    if row is None:
        return None
    return IdempotentWrite(body_hash=row[0], revision=int(row[1]), keys=tuple(keys(row[2])))


def tombstone_query(query: TombstoneQuery, dialect: Dialect) -> tuple[str, tuple[str, ...]]:
    """The SQL and parameters of `query` in `dialect`: the tombstones of one version (by
    version id), or of every version of one or several entries, oldest first."""
    select = (
        "SELECT entry_id, entry_version_id, version, erased_revision, erased_at, actor "
        "FROM erased_versions WHERE scope_id = ?"
    )
    values: tuple[str, ...]
    if query.entry_version_id is not None:
        where, values = " AND entry_version_id = ?", (query.entry_version_id,)
    elif query.entry_id is not None:
        where, values = " AND entry_id = ? ORDER BY version", (query.entry_id,)
    else:
        assert query.entry_ids is not None  # a TombstoneQuery names one of the three
        values = query.entry_ids or ("",)  # IN () is not SQL; no entry id is empty
        marks = ",".join("?" * len(values))
        where = f" AND entry_id IN ({marks}) ORDER BY entry_id, version"
    return (select + where).replace("?", placeholder(dialect)), (query.scope_id, *values)


def tombstone_from_row(row: Sequence[Any], erased_at: datetime) -> Tombstone:
    return Tombstone(
        entry_id=row[0],
        entry_version_id=row[1],
        version=int(row[2]),
        erased_revision=int(row[3]),
        erased_at=erased_at,
        actor=row[5],
    )
