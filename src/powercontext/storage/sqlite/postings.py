"""One term's postings in a scope's full-text cache: the rows holding it and its frequency
there, appended in row order (storage.sqlite.fulltext fills them, fts_scoring reads them)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from powercontext.storage.sqlite.vectors import grow


class Postings:
    """Growable (row, term frequency) arrays of one term, rows ascending."""

    __slots__ = ("rows", "size", "tfs")

    def __init__(self) -> None:
        self.rows: npt.NDArray[np.int32] = np.zeros(4, dtype=np.int32)
        self.tfs: npt.NDArray[np.float32] = np.zeros(4, dtype=np.float32)
        self.size = 0

    @classmethod
    def of(cls, rows: npt.NDArray[np.int32], tfs: npt.NDArray[np.float32]) -> Postings:
        """Postings over existing arrays (a snapshot's mapping); the first append copies."""
        postings = cls()
        postings.rows, postings.tfs, postings.size = rows, tfs, int(rows.shape[0])
        return postings

    def extend(self, rows: npt.NDArray[np.int32], tfs: npt.NDArray[np.float32]) -> None:
        end = self.size + rows.shape[0]
        if end > self.rows.shape[0]:
            capacity = max(end, 2 * self.rows.shape[0])
            self.rows = grow(self.rows, capacity)
            self.tfs = grow(self.tfs, capacity)
        self.rows[self.size : end] = rows
        self.tfs[self.size : end] = tfs
        self.size = end
