"""The embedded store's in-memory search structures: BM25 postings and the HNSW index.

Both are caches of the database; these tests check they agree with the SQL path and with
exact search, honour the revision being read, and pick up writes of another store instance
(another process, as far as the cache can tell).
"""

from __future__ import annotations

from dataclasses import replace
from importlib.util import find_spec
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.ports import (
    CommitRequest,
    FtsQuery,
    PlannedChange,
    StoredVersion,
    VectorCandidate,
    VectorQuery,
    VersionPage,
)
from powercontext.memory.search.analyze import index_tokens
from powercontext.storage.sqlite import IndexOptions, SqliteMemoryStore, fts_scoring
from tests.integration.planned import planned_adds

# hnswlib is the optional `[hnsw]` extra (it compiles C++); the dev install includes it.
HAS_HNSWLIB = find_spec("hnswlib") is not None
METHODS = [
    "signbits",
    pytest.param(
        "hnsw",
        marks=pytest.mark.skipif(
            not HAS_HNSWLIB, reason="hnswlib is not installed (the optional [hnsw] extra)"
        ),
    ),
]

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def _add(i: int, text: str) -> PlannedChange:
    return planned_adds([text], start=i, tokens=index_tokens)[0]


def _retire(version: StoredVersion) -> PlannedChange:
    return PlannedChange(op="retire", previous_entry_version_id=version.entry_version_id)


def _texts(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 9)))) for _ in range(count)]


def _units(count: int, seed: int, dimension: int = 32) -> npt.NDArray[np.float32]:
    matrix = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    units: npt.NDArray[np.float32] = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return units


async def test_memory_bm25_returns_what_fts5_matches(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    memory = await SqliteMemoryStore.open(path)
    sql = await SqliteMemoryStore.open(path, index=IndexOptions(fulltext="fts5"))
    try:
        texts = _texts(400, seed=3)
        result = await memory.commit(
            CommitRequest("s", None, [_add(i, t) for i, t in enumerate(texts)])
        )
        await memory.commit(
            CommitRequest(
                "s",
                1,
                [
                    _retire(v)
                    for v in (
                        await memory.list_versions(VersionPage("s", 1, after_key=None, limit=50))
                    )
                ],
            )
        )
        for revision in (1, 2):
            for terms in (["golf"], ["alpha", "hotel"], ["india", "echo", "bravo"]):
                ours = await memory.fts_candidates(FtsQuery("s", revision, terms, limit=1000))
                theirs = await sql.fts_candidates(FtsQuery("s", revision, terms, limit=1000))
                assert {c.key for c in ours} == {c.key for c in theirs}
                assert [c.score for c in ours] == sorted((c.score for c in ours), reverse=True)
                for candidate in ours:
                    assert candidate.tokens & set(terms)
        retired = set(result.keys[:50])
        assert not retired & {
            c.key for c in await memory.fts_candidates(FtsQuery("s", 2, WORDS, limit=1000))
        }
        assert retired <= {
            c.key for c in await memory.fts_candidates(FtsQuery("s", 1, WORDS, limit=1000))
        }
    finally:
        await memory.close()
        await sql.close()


async def test_rare_terms_score_only_their_rows_and_rank_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Terms whose postings hold few rows are scored over those rows alone (_search_sparse);
    the answer, floats included, is the dense path's, at every revision, limit and filter."""
    store = await SqliteMemoryStore.open(tmp_path / "m.sqlite3")
    try:
        texts = _texts(400, seed=5)
        changes = [_add(i, t) for i, t in enumerate(texts)]
        changes[::3] = [
            PlannedChange(op="add", new=replace(c.new, kind="event"))
            for c in changes[::3]
            if c.new is not None
        ]
        await store.commit(CommitRequest("s", None, changes))
        listed = await store.list_versions(VersionPage("s", 1, after_key=None, limit=40))
        await store.commit(CommitRequest("s", 1, [_retire(v) for v in listed]))
        only_events = MemoryFilter(kinds=("event",))
        for revision in (1, 2):
            for terms in (["golf"], ["alpha", "hotel"], ["india", "echo", "bravo", "nothing"]):
                for limit in (1, 7, 1000):
                    for where in (None, only_events):
                        answers = []
                        for share in (0, 10**9):  # dense, then sparse
                            monkeypatch.setattr(fts_scoring, "_SPARSE_SHARE", share)
                            answers.append(
                                await store.fts_candidates(
                                    FtsQuery("s", revision, terms, limit=limit, where=where)
                                )
                            )
                        assert answers[0] == answers[1]
                        assert answers[0], (revision, terms, limit, where)
    finally:
        await store.close()


async def test_postings_pick_up_another_store_s_writes(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    reader = await SqliteMemoryStore.open(path)
    writer = await SqliteMemoryStore.open(path)
    try:
        first = await writer.commit(CommitRequest("s", None, [_add(0, "quiet harbor")]))
        assert [
            c.key for c in await reader.fts_candidates(FtsQuery("s", 1, ["harbor"], limit=5))
        ] == list(first.keys)
        second = await writer.commit(CommitRequest("s", 1, [_add(1, "harbor harbor storm")]))
        (version,) = (await writer.fetch_versions("s", first.keys)).values()
        await writer.commit(CommitRequest("s", 2, [_retire(version)]))
        at3 = await reader.fts_candidates(FtsQuery("s", 3, ["harbor"], limit=5))
        assert [c.key for c in at3] == list(second.keys)
        at2 = await reader.fts_candidates(FtsQuery("s", 2, ["harbor"], limit=5))
        assert [c.key for c in at2] == [second.keys[0], first.keys[0]]  # higher tf first
    finally:
        await reader.close()
        await writer.close()


async def _with_vectors(path: Path, count: int, options: IndexOptions) -> SqliteMemoryStore:
    store = await SqliteMemoryStore.open(path, index=options)
    result = await store.commit(
        CommitRequest("s", None, [_add(i, f"row {i}") for i in range(count)])
    )
    await store.put_vectors("s", "p", list(zip(result.keys, _units(count, 5), strict=True)))
    return store


def _used(store: SqliteMemoryStore, method: str) -> bool:
    matrix = store._vectors.get("s", "p")
    if method == "signbits":
        return matrix.bits is not None and matrix.sign_bits_ok
    return matrix.ann is not None


@pytest.mark.parametrize("method", METHODS)
async def test_approximate_search_agrees_with_exact_search_and_honours_revisions(
    tmp_path: Path, method: Literal["signbits", "hnsw"]
) -> None:
    path = tmp_path / "v.sqlite3"
    ann = await _with_vectors(path, 3000, IndexOptions(ann_min_rows=1000, ann_method=method))
    exact = await SqliteMemoryStore.open(path, index=IndexOptions(ann=False))
    try:
        queries = _units(20, 9)
        overlap = 0
        for query in queries:
            approximate = await ann.vector_candidates(VectorQuery("s", 1, "p", query, limit=30))
            truth = await exact.vector_candidates(VectorQuery("s", 1, "p", query, limit=30))
            overlap += len({c.key for c in approximate} & {c.key for c in truth})
            sims = [c.similarity for c in approximate]
            assert sims == sorted(sims, reverse=True)
        assert overlap / (30 * len(queries)) >= 0.95
        assert _used(ann, method)  # the approximate path was really taken

        # Retire the best hits of the first query: the head never returns them, revision 1 may.
        best = await exact.vector_candidates(VectorQuery("s", 1, "p", queries[0], limit=40))
        versions = await ann.fetch_versions("s", [c.key for c in best])
        await ann.commit(CommitRequest("s", 1, [_retire(v) for v in versions.values()]))
        gone = {c.key for c in best}
        at_head = await ann.vector_candidates(VectorQuery("s", 2, "p", queries[0], limit=30))
        assert len(at_head) == 30 and not gone & {c.key for c in at_head}
        at_one = await ann.vector_candidates(VectorQuery("s", 1, "p", queries[0], limit=30))
        assert len({c.key for c in at_one} & gone) >= 28
    finally:
        await ann.close()
        await exact.close()


@pytest.mark.parametrize("method", METHODS)
async def test_approximate_search_sees_replaced_vectors_and_heavy_masking(
    tmp_path: Path, method: Literal["signbits", "hnsw"]
) -> None:
    path = tmp_path / "v.sqlite3"
    options = IndexOptions(ann_min_rows=1000, overfetch_limit=8, ann_method=method)
    store = await _with_vectors(path, 2000, options)
    try:
        target = _units(1, 42)[0]
        assert (await store.vector_candidates(VectorQuery("s", 1, "p", target, limit=1)))[
            0
        ].similarity < 0.9
        await store.put_vectors("s", "p", [(1500, target)])
        (top,) = await store.vector_candidates(VectorQuery("s", 1, "p", target, limit=1))
        assert top.key == 1500 and top.similarity > 0.999

        # 100 inactive rows, over the overfetch limit of 8: a filtered walk.
        first = await store.list_versions(VersionPage("s", 1, after_key=None, limit=100))
        await store.commit(CommitRequest("s", 1, [_retire(v) for v in first]))
        found = await store.vector_candidates(VectorQuery("s", 2, "p", target, limit=50))
        assert found[0].key == 1500 and len(found) == 50
        assert not {v.key for v in first} & {c.key for c in found}

        # 1,200 of 2,000 rows retired: under half active, so the search is exact.
        more = await store.list_versions(VersionPage("s", 2, after_key=100, limit=1100))
        await store.commit(CommitRequest("s", 2, [_retire(v) for v in more]))
        retired = {v.key for v in [*first, *more]} - {1500}
        found = await store.vector_candidates(VectorQuery("s", 3, "p", target, limit=100))
        assert len(found) == 100 and not retired & {c.key for c in found}
    finally:
        await store.close()


# Few rows rescored, so that sign bits alone would lose most answers on sparse vectors.
_SPARSE_OPTIONS = IndexOptions(ann_min_rows=1000, rescore_min=100, rescore_per_result=3)


async def _hashed(path: Path, count: int) -> tuple[SqliteMemoryStore, npt.NDArray[np.float32]]:
    rng = np.random.default_rng(4)
    vocabulary = [f"w{i}" for i in range(3000)]
    texts = [" ".join(rng.choice(vocabulary, size=12)) for _ in range(count)]
    vectors = HashingEmbedder(384).embed_sync(texts)
    store = await SqliteMemoryStore.open(path, index=_SPARSE_OPTIONS)
    result = await store.commit(
        CommitRequest("s", None, [_add(i, text) for i, text in enumerate(texts)])
    )
    await store.put_vectors("s", "p", list(zip(result.keys, vectors, strict=True)))
    return store, vectors


def _similarities(found: list[VectorCandidate]) -> list[float]:
    return [round(c.similarity, 5) for c in found]


async def test_sparse_queries_are_scored_exactly(tmp_path: Path) -> None:
    store, _ = await _hashed(tmp_path / "v.sqlite3", 3000)
    exact = await SqliteMemoryStore.open(tmp_path / "v.sqlite3", index=IndexOptions(ann=False))
    try:
        # A query of three of a row's words: ~3 non-zeros of 384, like a short question.
        for row in range(0, 3000, 150):
            words = " ".join(f"w{i}" for i in range(row, row + 3))
            query = HashingEmbedder(384).embed_sync([words])[0]
            found = await store.vector_candidates(VectorQuery("s", 1, "p", query, limit=30))
            truth = await exact.vector_candidates(VectorQuery("s", 1, "p", query, limit=30))
            assert _similarities(found) == _similarities(truth)
    finally:
        await store.close()
        await exact.close()


async def test_rows_that_fail_the_sign_bit_self_check_are_searched_exactly(
    tmp_path: Path,
) -> None:
    # Isotropic rows: every pair is nearly orthogonal, so the 30 nearest are hardly nearer
    # than the rest and 120 rows by Hamming distance miss most of them (self-check ~0.5).
    path = tmp_path / "v.sqlite3"
    store = await SqliteMemoryStore.open(path, index=_SPARSE_OPTIONS)
    result = await store.commit(
        CommitRequest("s", None, [_add(i, f"row {i}") for i in range(3000)])
    )
    await store.put_vectors("s", "p", list(zip(result.keys, _units(3000, 5), strict=True)))
    exact = await SqliteMemoryStore.open(path, index=IndexOptions(ann=False))
    try:
        for query in _units(10, 8):
            found = await store.vector_candidates(VectorQuery("s", 1, "p", query, limit=30))
            truth = await exact.vector_candidates(VectorQuery("s", 1, "p", query, limit=30))
            assert _similarities(found) == _similarities(truth)
        matrix = store._vectors.get("s", "p")
        assert matrix.bits is not None and not matrix.sign_bits_ok
    finally:
        await store.close()
        await exact.close()
