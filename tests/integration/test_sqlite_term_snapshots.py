"""BM25 postings snapshots: mapped by a new store, caught up incrementally, and exact."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from powercontext.memory.ports import CommitRequest, FtsQuery, PlannedChange
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.ann import IndexOptions
from powercontext.storage.sqlite.fulltext import ScopeTerms
from tests.integration.planned import planned_adds

OPTIONS = IndexOptions(snapshot_min_rows=100)
WORDS = [f"w{i}" for i in range(60)]
QUERIES = [["w1", "w7"], ["w3"], ["w0", "w11", "w42"], ["w59", "w2"], ["fresh"], ["nothing"]]


def _text(index: int, seed: int) -> str:
    rng = np.random.default_rng(seed * 100_000 + index)
    return " ".join(WORDS[int(i)] for i in rng.zipf(1.3, size=8) % len(WORDS))


def _adds(count: int, start: int = 0, seed: int = 1) -> list[PlannedChange]:
    return planned_adds([_text(i, seed) for i in range(start, start + count)], start)


async def _filled(path: Path, count: int, seed: int = 1) -> list[int]:
    store = await SqliteMemoryStore.open(path, index=OPTIONS)
    try:
        result = await store.commit(CommitRequest("s", None, _adds(count, seed=seed)))
        await store.fts_candidates(FtsQuery("s", 1, ["w1"], limit=5))  # fills, then saves
        return list(result.keys)
    finally:
        await store.close()


Found = list[list[tuple[int, float, frozenset[str]]]]


async def _search(path: Path, revision: int, options: IndexOptions) -> tuple[Found, ScopeTerms]:
    store = await SqliteMemoryStore.open(path, index=options)
    try:
        found = []
        for terms in QUERIES:
            page = await store.fts_candidates(FtsQuery("s", revision, terms, limit=20))
            found.append([(c.key, round(c.score, 4), c.tokens) for c in page])
        return found, store._terms.get("s")
    finally:
        await store.close()


async def _fresh(path: Path, revision: int) -> Found:
    return (await _search(path, revision, IndexOptions(snapshots=False)))[0]


async def test_a_new_store_maps_the_postings_and_reads_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    await _filled(path, 300)
    assert len(list((tmp_path / "memory.sqlite3.cache").glob("terms-*.bin"))) == 1
    found, terms = await _search(path, 1, OPTIONS)
    assert terms.snapshot_size == 300 and terms.rows_since_snapshot == 0
    assert found == await _fresh(path, 1)
    assert any(found)


async def test_a_stale_postings_snapshot_catches_up(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    keys = await _filled(path, 300)
    # The reference is a store that cached the scope before the changes and followed them
    # incrementally, as the snapshot does: a rewrite leaves a dropped term's posting at
    # frequency 0 there, where a fresh read never had it (see fulltext.py).
    live = await SqliteMemoryStore.open(path, index=IndexOptions(snapshots=False))
    try:
        await live.fts_candidates(FtsQuery("s", 1, ["w1"], limit=5))
        await live.commit(CommitRequest("s", 1, _adds(30, start=300, seed=2)))
        versions = await live.fetch_versions("s", [keys[4]])
        retire = PlannedChange(
            op="retire", previous_entry_version_id=versions[keys[4]].entry_version_id
        )
        await live.commit(CommitRequest("s", 2, [retire]))
        await live.rewrite_index_tokens("s", [(keys[9], "w1 w1 w1 w7 fresh")])
        for revision in (1, 2, 3):
            found, terms = await _search(path, revision, OPTIONS)
            assert terms.snapshot_size == 300 and terms.rows_since_snapshot == 30
            expected = []
            for query in QUERIES:
                page = await live.fts_candidates(FtsQuery("s", revision, query, limit=20))
                expected.append([(c.key, round(c.score, 4), c.tokens) for c in page])
            assert found == expected
    finally:
        await live.close()
    assert [key for key, _, _ in found[4]] == [keys[9]] and "fresh" in found[4][0][2]
    assert keys[4] not in [key for page in found for key, _, _ in page]


async def test_a_postings_snapshot_of_another_database_is_ignored(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "memory.sqlite3", tmp_path / "b" / "memory.sqlite3"
    await _filled(first, 300, seed=1)
    await _filled(second, 300, seed=2)
    shutil.rmtree(tmp_path / "b" / "memory.sqlite3.cache")
    shutil.copytree(
        tmp_path / "a" / "memory.sqlite3.cache", tmp_path / "b" / "memory.sqlite3.cache"
    )
    found, _ = await _search(second, 1, OPTIONS)
    assert found == await _fresh(second, 1)


async def test_drop_caches_discards_the_postings_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    await _filled(path, 300)
    store = await SqliteMemoryStore.open(path, index=OPTIONS)
    try:
        store.drop_caches()
    finally:
        await store.close()
    assert not list((tmp_path / "memory.sqlite3.cache").glob("terms-*"))
