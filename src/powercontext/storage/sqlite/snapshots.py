"""Persisted, memory-mapped snapshots of the vector matrices, next to the database file.

Filling a (scope, profile) matrix from `entry_vectors` reads and decodes every blob: at 1M
rows that was 14 s of the first search of every process, and 1.5 GB of private memory in each
of them. A snapshot holds the matrix, its keys, its added/removed revisions and its sign bits
in one file, `<db>.cache/vectors-<hash of scope and profile>.bin`, laid out as the arrays
themselves, so a new process maps it (copy-on-write: the file is never written through) and
only catches up with what changed since: the usual incremental refresh from
`last_vector_id` and `last_head`. Pages are shared with the page cache and with every other
process that maps the same file.

A snapshot is written after a matrix of at least `IndexOptions.snapshot_min_rows` rows is
first filled from the database, and again once a quarter of its rows (or that minimum) have
been read since; the file is written aside and renamed over the old one, so a reader maps
either whole version, never a torn one. The arrays have room for a quarter more rows (a hole
in the file, costing no disk) so that appends land in the mapping instead of copying it.

A snapshot is trusted only if it still describes this database: its format, scope, profile
and options match, `entry_vectors`' AUTOINCREMENT sequence has reached its last vector id,
the scope's head has reached its last head, and the vector it read last is still there with
the same key and bytes. Anything else (or an unreadable file) is ignored and rebuilt. Deleting
vectors in place (erasure) is not visible to the incremental refresh, so whoever deletes them
must call `discard(db_path)`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from powercontext.storage.sqlite.signbits import SignBits

if TYPE_CHECKING:
    from powercontext.storage.sqlite.vectors import VectorMatrix

log = logging.getLogger("powercontext.storage")

MAGIC = b"powercontext vector snapshot\n"
FORMAT = 1
HEADER_BYTES = 4096
ALIGN = 4096
MEMORY = ":memory:"


def cache_dir(db_path: str | Path) -> Path | None:
    """Where a database's snapshots live; None for an in-memory database."""
    if str(db_path) == MEMORY:
        return None
    path = Path(db_path)
    return path.with_name(path.name + ".cache")


def snapshot_path(db_path: str | Path, scope_id: str, profile_id: str) -> Path | None:
    folder = cache_dir(db_path)
    if folder is None:
        return None
    digest = hashlib.sha256(f"{scope_id}\0{profile_id}".encode()).hexdigest()[:24]
    return folder / f"vectors-{digest}.bin"


def discard(db_path: str | Path) -> int:
    """Delete every vector snapshot of a database (call after deleting vectors in place).

    Processes that already mapped a snapshot keep their mapping; their in-memory matrices
    must be dropped too (`SqliteMemoryStore.drop_caches`). Returns the files removed.
    """
    folder = cache_dir(db_path)
    if folder is None or not folder.is_dir():
        return 0
    removed = 0
    for path in folder.glob("vectors-*"):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
    return removed


@dataclass(frozen=True, slots=True)
class Header:
    scope_id: str
    profile_id: str
    dimension: int
    size: int
    capacity: int
    bits: bool
    last_vector_id: int
    last_vector_key: int
    last_vector_row: int
    last_head: int
    checked_size: int
    sign_bits_ok: bool

    def layout(self) -> list[tuple[str, np.dtype[Any], tuple[int, ...], int]]:
        """(name, dtype, shape, offset) of each array; offsets aligned, in file order."""
        words = (self.dimension + 63) // 64
        arrays: list[tuple[str, np.dtype[Any], tuple[int, ...]]] = [
            ("matrix", np.dtype("<f4"), (self.capacity, self.dimension)),
            ("keys", np.dtype("<i8"), (self.capacity,)),
            ("added", np.dtype("<i8"), (self.capacity,)),
            ("removed", np.dtype("<i8"), (self.capacity,)),
        ]
        if self.bits:
            arrays.append(("bits", np.dtype("<u8"), (words, self.capacity)))
        placed = []
        offset = HEADER_BYTES
        for name, dtype, shape in arrays:
            placed.append((name, dtype, shape, offset))
            nbytes = int(np.prod(shape)) * dtype.itemsize
            offset += (nbytes + ALIGN - 1) // ALIGN * ALIGN
        return placed

    def total_bytes(self) -> int:
        _name, dtype, shape, offset = self.layout()[-1]
        return offset + int(np.prod(shape)) * dtype.itemsize


def _header_of(matrix: VectorMatrix, capacity: int) -> Header:
    return Header(
        scope_id=matrix.scope_id,
        profile_id=matrix.profile_id,
        dimension=matrix.dimension,
        size=matrix.size,
        capacity=capacity,
        bits=matrix.bits is not None,
        last_vector_id=matrix.last_vector_id,
        last_vector_key=matrix.last_vector_key,
        last_vector_row=matrix.last_vector_row,
        last_head=matrix.last_head,
        checked_size=matrix.checked_size,
        sign_bits_ok=matrix.sign_bits_ok,
    )


def _read_header(path: Path) -> Header | None:
    with path.open("rb") as file:
        head = file.read(HEADER_BYTES)
    if len(head) < HEADER_BYTES or not head.startswith(MAGIC):
        return None
    fields = json.loads(head[len(MAGIC) :].rstrip(b"\0"))
    if fields.pop("format", None) != FORMAT:
        return None
    header = Header(**fields)
    if path.stat().st_size < header.total_bytes():
        return None
    return header


def save(matrix: VectorMatrix) -> None:
    """Write the matrix aside, rename it into place, then map it (dropping private copies)."""
    path = matrix.snapshot
    assert path is not None
    size = matrix.size
    header = _header_of(matrix, size + max(size // 4, 1024))
    arrays = _arrays_of(matrix)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("wb") as file:
            encoded = json.dumps({"format": FORMAT, **dataclasses.asdict(header)}).encode()
            file.write((MAGIC + encoded).ljust(HEADER_BYTES, b"\0"))
            for name, _dtype, _shape, offset in header.layout():
                file.seek(offset)
                array = arrays[name]
                if name == "bits":
                    for word in array:  # word-major: each word's first `size` rows
                        file.write(np.ascontiguousarray(word[:size]).data)
                        offset += header.capacity * 8
                        file.seek(offset)
                else:
                    file.write(np.ascontiguousarray(array[:size]).data)
            file.truncate(header.total_bytes())  # the unused capacity stays a hole
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except OSError as error:  # a cache: failing to write it must not fail the search
        log.warning("could not write the vector snapshot %s: %s", path, error)
        with contextlib.suppress(OSError):
            temporary.unlink()
        return
    _map(matrix, path, header)


def _arrays_of(matrix: VectorMatrix) -> dict[str, npt.NDArray[Any]]:
    arrays: dict[str, npt.NDArray[Any]] = {
        "matrix": matrix.matrix,
        "keys": matrix.keys,
        "added": matrix.added,
        "removed": matrix.removed,
    }
    if matrix.bits is not None:
        arrays["bits"] = matrix.bits.columns
    return arrays


def _map(matrix: VectorMatrix, path: Path, header: Header) -> None:
    raw = np.memmap(path, dtype=np.uint8, mode="c")
    for name, dtype, shape, offset in header.layout():
        nbytes = int(np.prod(shape)) * dtype.itemsize
        array = raw[offset : offset + nbytes].view(np.ndarray).view(dtype).reshape(shape)
        if name == "bits":
            if matrix.bits is None:
                matrix.bits = SignBits(header.dimension)
            matrix.bits.columns = array
        else:
            setattr(matrix, name, array)
    matrix.dimension = header.dimension
    matrix.size = header.size
    matrix.last_vector_id = header.last_vector_id
    matrix.last_vector_key = header.last_vector_key
    matrix.last_vector_row = header.last_vector_row
    matrix.last_head = header.last_head
    matrix.checked_size = header.checked_size
    matrix.sign_bits_ok = header.sign_bits_ok
    matrix.forget_rows()
    matrix.rows_since_snapshot = 0
    matrix.snapshot_size = header.size


def restore(matrix: VectorMatrix, conn: sqlite3.Connection) -> bool:
    """Map the matrix's snapshot if it still describes this database; True if it did."""
    path = matrix.snapshot
    if path is None or not path.is_file():
        return False
    try:
        header = _read_header(path)
    except (OSError, ValueError, TypeError) as error:
        log.info("ignoring the unreadable vector snapshot %s: %s", path, error)
        return False
    if header is None or not _still_valid(header, path, matrix, conn):
        log.info("ignoring the stale vector snapshot %s", path)
        return False
    _map(matrix, path, header)
    return True


def _still_valid(
    header: Header, path: Path, matrix: VectorMatrix, conn: sqlite3.Connection
) -> bool:
    if (header.scope_id, header.profile_id) != (matrix.scope_id, matrix.profile_id):
        return False
    if header.bits != (matrix.options.ann_method == "signbits") or header.size == 0:
        return False
    sequence = conn.execute(
        "SELECT seq FROM sqlite_sequence WHERE name = 'entry_vectors'"
    ).fetchone()
    if sequence is None or int(sequence[0]) < header.last_vector_id:
        return False
    head = conn.execute(
        "SELECT head_revision FROM scopes WHERE scope_id = ?", (matrix.scope_id,)
    ).fetchone()
    if head is None or int(head[0]) < header.last_head:
        return False
    # The last vector read must still be in the database, with the same key and bytes: a
    # different database of the same shape (a restored or recreated file) fails here.
    last = conn.execute(
        "SELECT key, vector FROM entry_vectors "
        "WHERE vector_id = ? AND scope_id = ? AND profile_id = ?",
        (header.last_vector_id, matrix.scope_id, matrix.profile_id),
    ).fetchone()
    if last is None or int(last[0]) != header.last_vector_key:
        return False
    row_bytes = 4 * header.dimension
    with path.open("rb") as file:
        file.seek(header.layout()[0][3] + header.last_vector_row * row_bytes)
        return file.read(row_bytes) == bytes(last[1])


def due(matrix: VectorMatrix) -> bool:
    """Whether enough has been read from the database since the last snapshot to write one."""
    minimum = matrix.options.snapshot_min_rows
    if matrix.snapshot is None or matrix.size < minimum:
        return False
    return matrix.rows_since_snapshot >= max(minimum, matrix.snapshot_size // 4, 1)
