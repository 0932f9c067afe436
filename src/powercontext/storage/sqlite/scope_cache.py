"""What the in-memory indexes of a scope share: the postings (fulltext.py) and the vector
matrices (vectors.py) are each filled from the database, persisted as a snapshot file, and
emptied when the scope is erased (storage.sqlite.erasure)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Self

from powercontext.storage.sqlite.reads import head_and_erasures


class ScopeCache:
    """One scope's cached index. Callers hold `lock` around refresh and use."""

    erasures: int
    """The scope's erasure count when the cache was filled."""
    size: int
    """Rows the cache holds."""
    snapshot_size: int
    """Rows the snapshot held when it was written or mapped."""
    rows_since_snapshot: int
    """Rows read from the database since then."""

    def __init__(self, scope_id: str, snapshot: Path | None) -> None:
        self.scope_id = scope_id
        self.lock = threading.Lock()
        self.snapshot = snapshot
        """The cache's snapshot file; None: never persisted."""
        self._snapshot_tried = snapshot is None

    def catch_up(
        self,
        conn: sqlite3.Connection,
        restore: Callable[[Self, sqlite3.Connection, Path], object],
        drop: Callable[[], None],
    ) -> int:
        """The start of every refresh, within the caller's read transaction: on first use,
        `restore` the snapshot file if there is one (it maps the file if it still describes
        this database); when the scope was erased since, `drop` everything (erased data must
        leave memory too). Returns the scope's head."""
        if not self._snapshot_tried:
            self._snapshot_tried = True
            if self.snapshot is not None and self.snapshot.is_file():
                restore(self, conn, self.snapshot)
        head, erasures = head_and_erasures(conn, self.scope_id)
        if erasures != self.erasures:
            drop()
            self.erasures = erasures
        return head

    def matches_snapshot(self) -> None:
        """Record that the cache holds what its snapshot file does (just written or mapped)."""
        self.rows_since_snapshot = 0
        self.snapshot_size = self.size
