"""Small performance checks at 10k entries; run with `-s` to see the figures.

The bounds are loose (this machine is shared); they catch regressions by an order of
magnitude, not noise.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from powercontext.memory.ports import (
    CommitRequest,
    FtsQuery,
    NewVersion,
    PlannedChange,
    VectorQuery,
)
from powercontext.memory.search.analyze import index_tokens, query_terms
from powercontext.storage.sqlite import SqliteMemoryStore

ENTRIES = 10_000
DIMENSION = 384
QUERIES = 40


def _zipf_texts(count: int, words: int, seed: int) -> list[str]:
    """Word frequencies like natural text: a few very common words, a long tail."""
    ranks = np.random.default_rng(seed).zipf(1.15, size=(count, words)) % 20_000
    return [" ".join(f"w{rank}" for rank in row) for row in ranks]


def _adds(texts: list[str]) -> list[PlannedChange]:
    return [
        PlannedChange(
            op="add",
            new=NewVersion(
                entry_id=f"e{i}",
                entry_version_id=f"v{i}",
                version=1,
                kind="fact",
                text=text,
                metadata={"source": "perf", "turn": i},
                index_tokens=index_tokens(text),
            ),
        )
        for i, text in enumerate(texts)
    ]


def _p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def test_ten_thousand_entries(tmp_path: Path) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "memory.sqlite3")
    try:
        changes = _adds(_zipf_texts(ENTRIES, 14, seed=0))
        started = time.perf_counter()
        result = await store.commit(CommitRequest("s", None, changes))
        commit_rate = ENTRIES / (time.perf_counter() - started)

        rng = np.random.default_rng(1)
        vectors = rng.standard_normal((ENTRIES, DIMENSION)).astype(np.float32)
        started = time.perf_counter()
        for start in range(0, ENTRIES, 1_000):
            await store.put_vectors(
                "s",
                "p",
                list(zip(result.keys[start : start + 1_000], vectors[start:], strict=False)),
            )
        vector_rate = ENTRIES / (time.perf_counter() - started)
        assert await store.missing_vector_count("s", 1, "p") == 0  # loads the matrix

        vector_ms = []
        for query in rng.standard_normal((QUERIES, DIMENSION)).astype(np.float32):
            started = time.perf_counter()
            found = await store.vector_candidates(VectorQuery("s", 1, "p", query, limit=128))
            vector_ms.append(time.perf_counter() - started)
            assert len(found) == 128

        fts_ms = []
        for text in _zipf_texts(QUERIES, 5, seed=2):
            terms = query_terms(text)
            started = time.perf_counter()
            await store.fts_candidates(FtsQuery("s", 1, terms, limit=128))
            fts_ms.append(time.perf_counter() - started)

        print(
            f"\n10k entries: commit {commit_rate:.0f} entries/s, put_vectors {vector_rate:.0f}/s, "
            f"vector p50 {_p50_ms(vector_ms):.2f} ms, fts p50 {_p50_ms(fts_ms):.2f} ms"
        )
        assert commit_rate >= 3_000
        assert _p50_ms(vector_ms) < 100
        assert _p50_ms(fts_ms) < 250
    finally:
        await store.close()
