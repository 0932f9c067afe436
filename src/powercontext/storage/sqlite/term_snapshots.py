"""Persisted, memory-mapped snapshots of a scope's BM25 postings (fulltext.ScopeTerms).

Filling a scope's postings reads and splits every version's tokens from FTS5: at 1M entries
that was 20 s of the first full-text search of every process. A snapshot,
`<db>.cache/terms-<hash of scope>.bin` (mapped.py), holds the per-row arrays, each row's
distinct term ids, the term names, and every term's postings laid end to end (one offsets
array, CSR-like); a new process maps it, builds the term dictionary, and catches up with the
usual incremental refresh (keys above `last_key`, removals after `last_head`, rewrites after
`last_rewrite`). A term's postings stay views into the mapping until a new row adds to them.

Written, trusted and discarded like the vector snapshots (vector_snapshots.py, the files in
mapped.py): after a scope of at least `snapshot_min_rows` rows is first filled, and again
once a quarter of its rows have been read since; trusted only if the scope's head and
rewrite sequence have reached the snapshot's, and the last version it read is still there,
added at the same revision, with the same tokens.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from powercontext.storage.sqlite import mapped
from powercontext.storage.sqlite.postings import Postings

if TYPE_CHECKING:
    from powercontext.storage.sqlite.fulltext import ScopeTerms

log = logging.getLogger("powercontext.storage")

MAGIC = b"powercontext postings snapshot 1\n"
SCALARS = (
    "erasures",
    "size",
    "token_used",
    "total_length",
    "own_total",
    "context_total",
    "last_key",
    "last_head",
    "last_rewrite",
)
ROW_ARRAYS = ("keys", "added", "removed", "lengths", "own_lengths", "context_lengths", "token_end")


def snapshot_path(db_path: str | Path, scope_id: str) -> Path | None:
    folder = mapped.cache_dir(db_path)
    if folder is None:
        return None
    return folder / f"terms-{hashlib.sha256(scope_id.encode()).hexdigest()[:24]}.bin"


def save(terms: ScopeTerms) -> None:
    """Write the postings aside, rename them into place, then map them."""
    path = terms.snapshot
    assert path is not None
    size, used = terms.size, terms.token_used
    room = size + max(size // 4, 1024)
    fields: dict[str, Any] = {name: getattr(terms, name) for name in SCALARS}
    fields["scope_id"] = terms.scope_id
    parts = [mapped.Part(name, getattr(terms, name)[:size], (room,)) for name in ROW_ARRAYS]
    token_room = used + max(used // 4, 1024)
    parts.append(mapped.Part("row_tokens", terms.row_tokens[:used], (token_room,)))
    postings = [terms.terms[name] for name in terms.names]
    counts = np.fromiter((p.size for p in postings), dtype=np.int64, count=len(postings))
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    rows = np.concatenate([p.rows[: p.size] for p in postings] or [np.zeros(0, np.int32)])
    tfs = np.concatenate([p.tfs[: p.size] for p in postings] or [np.zeros(0, np.float32)])
    names = np.frombuffer("\n".join(terms.names).encode(), dtype=np.uint8)
    rewritten = sorted(terms.rewritten.items())
    rewritten_rows = np.asarray([row for row, _ in rewritten], dtype=np.int64)
    rewritten_ids = np.concatenate([ids for _, ids in rewritten] or [np.zeros(0, np.int32)])
    rewritten_offsets = np.concatenate(
        ([0], np.cumsum([ids.shape[0] for _, ids in rewritten]))
    ).astype(np.int64)
    for name, data in (
        ("offsets", offsets),
        ("post_rows", rows.astype(np.int32)),
        ("post_tfs", tfs.astype(np.float32)),
        ("names", names),
        ("rewritten_rows", rewritten_rows),
        ("rewritten_offsets", rewritten_offsets),
        ("rewritten_ids", rewritten_ids.astype(np.int32)),
    ):
        parts.append(mapped.Part(name, data, data.shape))
    if mapped.write(path, MAGIC, fields, parts):
        found = mapped.read_fields(path, MAGIC)
        if found is not None:
            _map(terms, fields, mapped.map_parts(path, found))


def _names(arrays: dict[str, npt.NDArray[Any]]) -> list[str]:
    blob = arrays["names"].tobytes()
    return blob.decode().split("\n") if blob else []


def _map(terms: ScopeTerms, fields: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> None:
    terms.reset()
    for name in ROW_ARRAYS:
        setattr(terms, name, arrays[name])
    terms.row_tokens = arrays["row_tokens"]
    for name in SCALARS:
        setattr(terms, name, fields[name])
    names = _names(arrays)
    offsets = arrays["offsets"].tolist()
    rows, tfs = arrays["post_rows"], arrays["post_tfs"]
    terms.names = names
    terms.term_ids = {name: index for index, name in enumerate(names)}
    terms.terms = {
        name: Postings.of(rows[offsets[i] : offsets[i + 1]], tfs[offsets[i] : offsets[i + 1]])
        for i, name in enumerate(names)
    }
    rewritten_offsets = arrays["rewritten_offsets"].tolist()
    ids = arrays["rewritten_ids"]
    terms.rewritten = {
        int(row): np.array(ids[rewritten_offsets[i] : rewritten_offsets[i + 1]])
        for i, row in enumerate(arrays["rewritten_rows"].tolist())
    }
    terms.matches_snapshot()


def restore(terms: ScopeTerms, conn: sqlite3.Connection, path: Path) -> bool:
    """Map the scope's postings snapshot file if it still describes this database."""
    fields = mapped.read_fields(path, MAGIC)
    if fields is None or fields.get("scope_id") != terms.scope_id or not fields["size"]:
        log.info("ignoring the postings snapshot %s", path)
        return False
    arrays = mapped.map_parts(path, fields)
    if not _still_valid(fields, arrays, terms.scope_id, conn):
        log.info("ignoring the stale postings snapshot %s", path)
        return False
    _map(terms, fields, arrays)
    return True


def _still_valid(
    fields: dict[str, Any],
    arrays: dict[str, npt.NDArray[Any]],
    scope_id: str,
    conn: sqlite3.Connection,
) -> bool:
    head = conn.execute("SELECT head_revision FROM scopes WHERE scope_id = ?", (scope_id,))
    found = head.fetchone()
    if found is None or int(found[0]) < fields["last_head"]:
        return False
    rewrite = conn.execute("SELECT max(seq) FROM fts_rewrites WHERE scope_id = ?", (scope_id,))
    latest = rewrite.fetchone()
    if int(latest[0] or 0) < fields["last_rewrite"]:
        return False
    last = int(fields["size"]) - 1
    key = int(arrays["keys"][last])
    version = conn.execute(
        "SELECT v.added_revision, f.tokens FROM entry_versions v JOIN entry_fts f "
        "ON f.rowid = v.key WHERE v.scope_id = ? AND v.key = ?",
        (scope_id, key),
    ).fetchone()
    if version is None or int(version[0]) != int(arrays["added"][last]):
        return False
    if key != fields["last_key"]:
        return False
    rewritten = conn.execute(
        "SELECT 1 FROM fts_rewrites WHERE scope_id = ? AND key = ? LIMIT 1", (scope_id, key)
    ).fetchone()
    if rewritten is not None:
        return True  # its tokens may have changed since; the refresh replays them
    first = int(arrays["token_end"][last - 1]) if last else 0
    names = _names(arrays)
    held = {names[i] for i in arrays["row_tokens"][first : int(arrays["token_end"][last])]}
    return held == set(str(version[1]).split())


def due(terms: ScopeTerms, minimum: int) -> bool:
    if terms.snapshot is None:
        return False
    return mapped.due(terms.size, terms.rows_since_snapshot, terms.snapshot_size, minimum)
