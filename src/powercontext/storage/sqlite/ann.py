"""Store index options, and the optional HNSW (hnswlib) index over one cached vector matrix.

The default approximate path is sign-bit quantization (signbits.py): faster and more exact on
the benchmark vectors, with nothing to build. HNSW stays selectable (`ann_method="hnsw"`).

Exact search over 100k x 384 float32 costs ~20 ms on the 2-core development machine, more
than the whole hybrid budget; HNSW answers the same query in well under a millisecond with
recall@30 that depends on the data (bench/search_latency.py reports it). It lives next to the exact
matrix and uses the matrix's row positions as labels, so it can be rebuilt at any time from
the matrix, which in turn is rebuilt from the database: nothing of it is persisted.

Revisions: the index holds every row the matrix holds (retired versions included). A search
at revision r must return only rows active at r. When every row is active (the common case,
searching the head with nothing retired) the index is queried as is; when a few rows are not,
it is asked for that many more results and they are dropped; otherwise hnswlib's filter keeps
the walk inside the active rows. When fewer than half of the rows are active, the filter
would visit mostly dead nodes and the caller searches exactly instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

try:  # optional: without hnswlib every search is exact
    import hnswlib  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - exercised only where hnswlib is missing
    hnswlib = None


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """How the embedded store searches; the defaults are what bench/search_latency.py tuned."""

    ann: bool = True
    """Search large matrices approximately (False: always exact)."""
    ann_method: Literal["signbits", "hnsw"] = "signbits"
    """`signbits`: Hamming pre-filter over sign bits, exact rescoring (signbits.py);
    `hnsw`: an hnswlib graph (needs the `hnswlib` package)."""
    ann_min_rows: int = 20_000
    """Below this many rows exact search is already fast (~3 ms at 10k) and exact."""
    rescore_min: int = 1_000
    rescore_per_result: int = 25
    rescore_fraction: float = 0.01
    """signbits: rows rescored exactly = max(min, per_result x limit, fraction x rows);
    bench/vector_index.py measured recall@30 0.98 at 100k with 1,000 (limit 40)."""
    signbits_min_recall: float = 0.85
    """signbits: a matrix whose sign-bit recall@30, self-checked with a sample of its own rows
    as queries, falls below this is searched exactly (see vectors.py). Rows have tighter
    neighbourhoods than questions, so the check reads low (0.91 at 100k on the benchmark's
    dense vectors, whose real queries get 0.98). Since the bits are taken after a random
    rotation (signbits.py), sparse and low-rank vectors pass it and keep recall >= 0.95;
    near-isotropic full-rank vectors (no neighbour much nearer than the rest) still fail it."""
    ann_m: int = 16
    ann_ef_construction: int = 64
    ann_ef_search: int = 256
    """Beam width of a query; raised to the number of results asked for when that is larger."""
    ann_threads: int = -1
    """Threads for building the index (-1: all cores); queries run on the calling thread."""
    overfetch_limit: int = 512
    """Up to this many inactive rows are handled by asking for more results and dropping them."""
    snapshots: bool = True
    """Persist matrices of at least `snapshot_min_rows` rows as memory-mapped files next to
    the database (vector_snapshots.py), so that a new process maps them instead of reading every
    vector back."""
    snapshot_min_rows: int = 20_000
    fulltext: str = "memory"
    """`memory`: BM25 over cached postings (fulltext.py); `fts5`: FTS5's bm25() in SQL."""

    def ann_available(self) -> bool:
        return self.ann and (self.ann_method == "signbits" or hnswlib is not None)

    def rescore_count(self, limit: int, rows: int) -> int:
        wanted = max(self.rescore_min, self.rescore_per_result * limit)
        return max(wanted, int(self.rescore_fraction * rows))


class HnswIndex:
    """Row positions of a VectorMatrix in an hnswlib inner-product index (vectors are unit)."""

    def __init__(self, dimension: int, options: IndexOptions) -> None:
        assert hnswlib is not None
        self.options = options
        self.count = 0
        """Rows [0, count) of the matrix are in the index."""
        self._index = hnswlib.Index(space="ip", dim=dimension)
        self._index.init_index(
            max_elements=1024,
            ef_construction=options.ann_ef_construction,
            M=options.ann_m,
            random_seed=7,
        )

    def add(self, matrix: npt.NDArray[np.float32], positions: npt.NDArray[np.int64]) -> None:
        """Insert rows, or replace the vectors of rows already inserted."""
        if positions.size == 0:
            return
        needed = int(positions.max()) + 1
        capacity = int(self._index.get_max_elements())
        if needed > capacity:
            self._index.resize_index(max(needed, 2 * capacity))
        self._index.add_items(matrix[positions], positions, num_threads=self.options.ann_threads)
        self.count = max(self.count, needed)

    def query(
        self, vector: npt.NDArray[np.float32], k: int, active: npt.NDArray[np.bool_] | None
    ) -> npt.NDArray[np.int64] | None:
        """Up to `k` row positions nearest to `vector` among `active` rows (None: all rows).

        Returns None when the index cannot answer (the filter starved the beam); the caller
        then searches exactly.
        """
        if k <= 0:
            return np.zeros(0, dtype=np.int64)
        inactive = 0 if active is None else self.count - int(np.count_nonzero(active[: self.count]))
        try:
            if inactive == 0:
                return self._knn(vector, k, None)
            if inactive <= self.options.overfetch_limit:
                assert active is not None
                labels = self._knn(vector, min(k + inactive, self.count), None)
                return labels[active[labels]][:k]
            assert active is not None
            mask = active
            return self._knn(vector, k, lambda label: bool(mask[label]))
        except RuntimeError:  # hnswlib: fewer than k results reachable
            return None

    def _knn(self, vector: npt.NDArray[np.float32], k: int, keep: object) -> npt.NDArray[np.int64]:
        self._index.set_ef(max(self.options.ann_ef_search, k))
        labels, _distances = self._index.knn_query(vector, k=k, num_threads=1, filter=keep)
        found: npt.NDArray[np.int64] = labels[0].astype(np.int64)
        return found
