"""One file of numpy arrays behind a JSON header, written aside and renamed, mapped back.

The store's snapshots (vector_snapshots.py for vector matrices, term_snapshots.py for BM25
postings) are laid out as the arrays themselves, so a new process maps them copy-on-write
(the file is never written through; pages are shared with the page cache and with every
other process mapping the same file) instead of rebuilding them from the database.

An array may be given more room than its data (`Part.shape` larger than `data.shape`): the
unused tail is a hole in the file, costing no disk, so that rows appended after mapping land
in the mapping instead of copying the whole array. Room is on the first axis, or on the last
one for a 2-D array whose rows each have room (word-major sign bits).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

log = logging.getLogger("powercontext.storage")

HEADER_BYTES = 1 << 16
ALIGN = 4096
MEMORY = ":memory:"


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    data: npt.NDArray[Any]
    shape: tuple[int, ...]
    """The mapped shape: at least `data.shape` on every axis."""


def cache_dir(db_path: str | Path) -> Path | None:
    """Where a database's snapshots live, `<db>.cache`; None for an in-memory database."""
    if str(db_path) == MEMORY:
        return None
    path = Path(db_path)
    return path.with_name(path.name + ".cache")


def discard(db_path: str | Path) -> int:
    """Delete every snapshot of a database, vectors and postings (after deleting vectors or
    tokens in place). Processes that mapped one keep their mapping until they drop their
    caches. Returns the number of files removed."""
    folder = cache_dir(db_path)
    if folder is None or not folder.is_dir():
        return 0
    removed = 0
    for path in [*folder.glob("vectors-*"), *folder.glob("terms-*")]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
    return removed


def _layout(
    parts: list[tuple[str, str, tuple[int, ...]]],
) -> list[tuple[str, np.dtype[Any], tuple[int, ...], int]]:
    placed = []
    offset = HEADER_BYTES
    for name, dtype_name, shape in parts:
        dtype = np.dtype(dtype_name)
        placed.append((name, dtype, shape, offset))
        nbytes = int(np.prod(shape)) * dtype.itemsize
        offset += (nbytes + ALIGN - 1) // ALIGN * ALIGN
    return placed


def write(path: Path, magic: bytes, fields: dict[str, Any], parts: list[Part]) -> bool:
    """Write the file aside and rename it over `path`; False (logged) if that failed."""
    described = [(p.name, p.data.dtype.str, tuple(p.shape)) for p in parts]
    header = json.dumps({"fields": fields, "parts": described}).encode()
    if len(magic) + len(header) > HEADER_BYTES:
        log.warning("snapshot header of %s too large; not written", path)
        return False
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    layout = _layout(described)
    end = layout[-1][3] + int(np.prod(layout[-1][2])) * layout[-1][1].itemsize
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("wb") as file:
            file.write((magic + header).ljust(HEADER_BYTES, b"\0"))
            for part, (_name, dtype, shape, offset) in zip(parts, layout, strict=True):
                data = part.data
                if data.ndim == 2 and data.shape[0] == shape[0] and data.shape[1] < shape[1]:
                    row_bytes = shape[1] * dtype.itemsize  # each row has room of its own
                    for index, row in enumerate(data):
                        file.seek(offset + index * row_bytes)
                        file.write(np.ascontiguousarray(row).data)
                else:
                    file.seek(offset)
                    file.write(np.ascontiguousarray(data).data)
            file.truncate(end)  # unused room stays a hole
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except OSError as error:  # a cache: failing to write it must not fail the search
        log.warning("could not write the snapshot %s: %s", path, error)
        with contextlib.suppress(OSError):
            temporary.unlink()
        return False
    return True


def read_fields(path: Path, magic: bytes) -> dict[str, Any] | None:
    """The header's fields, or None if this is not a whole snapshot with that magic."""
    try:
        with path.open("rb") as file:
            head = file.read(HEADER_BYTES)
        if len(head) < HEADER_BYTES or not head.startswith(magic):
            return None
        header = json.loads(head[len(magic) :].rstrip(b"\0"))
        layout = _layout([(n, d, tuple(s)) for n, d, s in header["parts"]])
        _name, dtype, shape, offset = layout[-1]
        if path.stat().st_size < offset + int(np.prod(shape)) * dtype.itemsize:
            return None
        fields: dict[str, Any] = header["fields"]
        fields["__layout__"] = layout
        return fields
    except (OSError, ValueError, KeyError, TypeError) as error:
        log.info("ignoring the unreadable snapshot %s: %s", path, error)
        return None


def read_slice(path: Path, fields: dict[str, Any], name: str, start: int, stop: int) -> bytes:
    """Bytes of elements [start, stop) of a 1-D part (or rows of a row-major 2-D part),
    read without mapping the file: for validating a snapshot before trusting it."""
    for part, dtype, shape, offset in fields["__layout__"]:
        if part == name:
            item = dtype.itemsize * int(np.prod(shape[1:]))
            with path.open("rb") as file:
                file.seek(offset + start * item)
                return file.read((stop - start) * item)
    raise KeyError(name)


def map_parts(path: Path, fields: dict[str, Any]) -> dict[str, npt.NDArray[Any]]:
    """Every part as an array over one copy-on-write mapping of the file."""
    raw = np.memmap(path, dtype=np.uint8, mode="c")
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name, dtype, shape, offset in fields["__layout__"]:
        nbytes = int(np.prod(shape)) * dtype.itemsize
        arrays[name] = raw[offset : offset + nbytes].view(np.ndarray).view(dtype).reshape(shape)
    return arrays


def due(size: int, since: int, last: int, minimum: int) -> bool:
    """Whether to write a snapshot: large enough, and a quarter (at least `minimum` rows) of
    it read from the database since the last one."""
    return size >= minimum and since >= max(minimum, last // 4, 1)
