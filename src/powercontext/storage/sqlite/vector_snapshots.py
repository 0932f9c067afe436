"""Persisted, memory-mapped snapshots of the vector matrices, next to the database file.

Filling a (scope, profile) matrix from `entry_vectors` reads and decodes every blob: at 1M
rows that was 14 s of the first search of every process, and 1.5 GB of private memory in each
of them. A snapshot holds the matrix, its keys, its added/removed revisions and its sign bits
in one file, `<db>.cache/vectors-<hash of scope and profile>.bin` (mapped.py), so a new
process maps it and only catches up with what changed since: the usual incremental refresh
from `last_vector_id` and `last_head`.

A snapshot is written after a matrix of at least `IndexOptions.snapshot_min_rows` rows is
first filled from the database, and again once a quarter of its rows (or that minimum) have
been read since. The arrays have room for a quarter more rows, so appends after mapping land
in the mapping.

A snapshot is trusted only if it still describes this database: its format, scope, profile
and options match, `entry_vectors`' AUTOINCREMENT sequence has reached its last vector id,
the scope's head has reached its last head, and the vector it read last is still there with
the same key and bytes. Anything else is ignored and rebuilt. Deleting vectors or tokens in
place (erasure) is invisible to the incremental refresh, so whoever does it must call
`discard(db_path)` (and drop the in-memory caches: `SqliteMemoryStore.drop_caches`).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from powercontext.storage.sqlite import mapped, signbits
from powercontext.storage.sqlite.signbits import SignBits

if TYPE_CHECKING:
    from powercontext.storage.sqlite.vectors import VectorMatrix

log = logging.getLogger("powercontext.storage")

MAGIC = b"powercontext vector snapshot 3\n"
"""3: sign bits of the rotated vectors, and the rotation (signbits.rotation)."""
SCALARS = (
    "erasures",
    "dimension",
    "size",
    "last_vector_id",
    "last_vector_key",
    "last_vector_row",
    "last_head",
    "checked_size",
    "sign_bits_ok",
)


def snapshot_path(db_path: str | Path, scope_id: str, profile_id: str) -> Path | None:
    folder = mapped.cache_dir(db_path)
    if folder is None:
        return None
    digest = hashlib.sha256(f"{scope_id}\0{profile_id}".encode()).hexdigest()[:24]
    return folder / f"vectors-{digest}.bin"


def save(matrix: VectorMatrix) -> None:
    """Write the matrix aside, rename it into place, then map it (dropping private copies)."""
    path = matrix.snapshot
    assert path is not None
    size = matrix.size
    room = size + max(size // 4, 1024)
    fields: dict[str, Any] = {name: getattr(matrix, name) for name in SCALARS}
    fields |= {"scope_id": matrix.scope_id, "profile_id": matrix.profile_id}
    parts = [
        mapped.Part("matrix", matrix.matrix[:size], (room, matrix.dimension)),
        mapped.Part("keys", matrix.keys[:size], (room,)),
        mapped.Part("added", matrix.added[:size], (room,)),
        mapped.Part("removed", matrix.removed[:size], (room,)),
    ]
    if matrix.bits is not None:
        columns = matrix.bits.columns
        parts.append(mapped.Part("bits", columns[:, :size], (columns.shape[0], room)))
        parts.append(mapped.Part("rotation", matrix.bits.rotation, matrix.bits.rotation.shape))
    if mapped.write(path, MAGIC, fields, parts):
        found = mapped.read_fields(path, MAGIC)
        if found is not None:
            _map(matrix, path, found)


def _map(matrix: VectorMatrix, path: Path, fields: dict[str, Any]) -> None:
    arrays = mapped.map_parts(path, fields)
    matrix.matrix = arrays["matrix"]
    matrix.keys, matrix.added, matrix.removed = arrays["keys"], arrays["added"], arrays["removed"]
    if "bits" in arrays:
        if "rotation" in arrays:
            signbits.adopt_rotation(arrays["rotation"])
        if matrix.bits is None:
            matrix.bits = SignBits(int(fields["dimension"]))
        matrix.bits.columns = arrays["bits"]
    for name in SCALARS:
        setattr(matrix, name, fields[name])
    matrix.forget_rows()
    matrix.matches_snapshot()


def restore(matrix: VectorMatrix, conn: sqlite3.Connection, path: Path) -> bool:
    """Map the matrix's snapshot file if it still describes this database; True if it did."""
    fields = mapped.read_fields(path, MAGIC)
    if fields is None or not _still_valid(fields, path, matrix, conn):
        log.info("ignoring the stale vector snapshot %s", path)
        return False
    _map(matrix, path, fields)
    return True


def _still_valid(
    fields: dict[str, Any], path: Path, matrix: VectorMatrix, conn: sqlite3.Connection
) -> bool:
    if (fields["scope_id"], fields["profile_id"]) != (matrix.scope_id, matrix.profile_id):
        return False
    has_bits = any(part[0] == "bits" for part in fields["__layout__"])
    if has_bits != (matrix.options.ann_method == "signbits") or fields["size"] == 0:
        return False
    sequence = conn.execute(
        "SELECT seq FROM sqlite_sequence WHERE name = 'entry_vectors'"
    ).fetchone()
    if sequence is None or int(sequence[0]) < fields["last_vector_id"]:
        return False
    head = conn.execute(
        "SELECT head_revision FROM scopes WHERE scope_id = ?", (matrix.scope_id,)
    ).fetchone()
    if head is None or int(head[0]) < fields["last_head"]:
        return False
    # The last vector read must still be in the database, with the same key and bytes: a
    # different database of the same shape (a restored or recreated file) fails here.
    last = conn.execute(
        "SELECT key, vector FROM entry_vectors "
        "WHERE vector_id = ? AND scope_id = ? AND profile_id = ?",
        (fields["last_vector_id"], matrix.scope_id, matrix.profile_id),
    ).fetchone()
    if last is None or int(last[0]) != fields["last_vector_key"]:
        return False
    row = int(fields["last_vector_row"])
    return mapped.read_slice(path, fields, "matrix", row, row + 1) == bytes(last[1])


def due(matrix: VectorMatrix) -> bool:
    """Whether enough has been read from the database since the last snapshot to write one."""
    if matrix.snapshot is None:
        return False
    return mapped.due(
        matrix.size,
        matrix.rows_since_snapshot,
        matrix.snapshot_size,
        matrix.options.snapshot_min_rows,
    )
