"""Contract: filters hold inside each channel before its top-k, and on list, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.ports import FtsQuery, MemoryStore, VectorQuery, VersionPage
from powercontext.memory.search.analyze import AnalyzerConfig, query_terms
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.ann import IndexOptions

N = 300


def _entry(i: int) -> RememberMemoryRequest:
    # Every entry says "kettle"; one in a hundred is a rare kind, every other one is "even".
    metadata: dict[str, object] = {"n": i, "parity": "even" if i % 2 == 0 else "odd"}
    if i % 3 == 0:
        metadata["tag"] = "third"
    if i % 10 == 0:
        metadata["flag"] = True
    return RememberMemoryRequest(
        kind="rare" if i % 100 == 7 else "fact", text=f"kettle note {i}", metadata=metadata
    )


@pytest.fixture
async def memory(store: MemoryStore) -> MemoryService:
    service = MemoryService(store, embedder=HashingEmbedder(dimension=64))
    await service.for_scope("f").remember_many([_entry(i) for i in range(N)])
    return service


def _numbers(hits: object) -> list[int]:
    return sorted(int(h.metadata["n"]) for h in hits)  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
async def test_a_selective_filter_still_fills_the_limit(memory: MemoryService, mode: str) -> None:
    scoped = memory.for_scope("f")
    rare = MemoryFilter(kinds=("rare",))
    page = await scoped.search(
        SearchMemoryRequest(query="kettle note", mode=mode, limit=3, filter=rare, min_similarity=-1)  # type: ignore[arg-type]
    )
    assert _numbers(page.hits) == [7, 107, 207]  # all three, although ranked far down
    assert all(hit.kind == "rare" for hit in page.hits)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (MemoryFilter(metadata={"n": {"eq": 42}}), [42]),  # type: ignore[dict-item]
        (MemoryFilter(metadata={"n": {"one_of": [1, 2, "3"]}}), [1, 2]),  # type: ignore[dict-item]
        (MemoryFilter(metadata={"n": {"gte": 295}}), [295, 296, 297, 298, 299]),  # type: ignore[dict-item]
        (MemoryFilter(metadata={"n": {"gt": 10, "lt": 14}}), [11, 12, 13]),  # type: ignore[dict-item]
        (
            MemoryFilter(metadata={"n": {"lte": 30}, "flag": {"eq": True}}),  # type: ignore[dict-item]
            [0, 10, 20, 30],
        ),
        (MemoryFilter(metadata={"n": {"lt": 9}, "tag": {"exists": True}}), [0, 3, 6]),  # type: ignore[dict-item]
        (MemoryFilter(metadata={"n": {"lt": 4}, "tag": {"exists": False}}), [1, 2]),  # type: ignore[dict-item]
        (MemoryFilter(metadata={"n": {"lt": 6}, "parity": {"gte": "f"}}), [1, 3, 5]),  # type: ignore[dict-item]
        (MemoryFilter(metadata={"n": {"eq": "42"}}), []),  # type: ignore[dict-item]
    ],
)
async def test_metadata_conditions_on_list_and_search(
    memory: MemoryService, where: MemoryFilter, expected: list[int]
) -> None:
    scoped = memory.for_scope("f")
    listed = await scoped.list(where=where, limit=1000)
    assert _numbers(listed.entries) == expected
    for mode in ("fts", "vector"):
        page = await scoped.search(
            SearchMemoryRequest(
                query="kettle note",
                mode=mode,
                limit=100,
                filter=where,
                min_similarity=-1,  # type: ignore[arg-type]
            )
        )
        assert _numbers(page.hits) == expected, mode


async def test_time_ranges(memory: MemoryService) -> None:
    scoped = memory.for_scope("f")
    now = datetime.now(UTC)
    past = MemoryFilter(created_before=now - timedelta(days=1))
    assert (await scoped.list(where=past)).entries == ()
    recent = MemoryFilter(created_after=now - timedelta(hours=1), kinds=("rare",))
    assert _numbers((await scoped.list(where=recent)).entries) == [7, 107, 207]
    later = MemoryFilter(created_after=now + timedelta(hours=1))
    page = await scoped.search(SearchMemoryRequest(query="kettle", mode="fts", filter=later))
    assert page.hits == ()


async def test_store_channels_filter_before_their_top_k(store: MemoryStore) -> None:
    service = MemoryService(store, embedder=HashingEmbedder(dimension=64))
    await service.for_scope("s").remember_many([_entry(i) for i in range(N)])
    rare = MemoryFilter(kinds=("rare",))
    terms = query_terms("kettle", AnalyzerConfig())
    fts = await store.fts_candidates(FtsQuery("s", 1, terms, limit=3, where=rare))
    assert len(fts) == 3
    query = np.ones(64, dtype=np.float32) / 8.0
    vector = await store.vector_candidates(
        VectorQuery("s", 1, service.embedder.profile.profile_id, query, limit=3, where=rare)
    )
    assert len(vector) == 3
    listed = await store.list_versions(VersionPage("s", 1, after_key=None, limit=10, where=rare))
    assert [v.kind for v in listed] == ["rare"] * 3


async def test_the_fts5_channel_filters_too(tmp_path: Path) -> None:
    store = await SqliteMemoryStore.open(tmp_path / "f.db", index=IndexOptions(fulltext="fts5"))
    try:
        service = MemoryService(store)
        await service.for_scope("s").remember_many([_entry(i) for i in range(N)])
        page = await service.for_scope("s").search(
            SearchMemoryRequest(query="kettle", mode="fts", limit=3, filter={"kinds": ["rare"]})  # type: ignore[arg-type]
        )
        assert _numbers(page.hits) == [7, 107, 207]
    finally:
        await store.close()


async def test_thread_and_occurred_at(store: MemoryStore) -> None:
    service = MemoryService(store, embedder=HashingEmbedder(dimension=64))
    scoped = service.for_scope("t")
    day = datetime(2025, 3, 1, tzinfo=UTC)
    await scoped.remember_many(
        [
            RememberMemoryRequest(
                text=f"kettle talk {i}",
                thread="chat-a" if i < 3 else "chat-b",
                occurred_at=day + timedelta(days=i),
                metadata={"n": i},
            )
            for i in range(6)
        ]
        + [RememberMemoryRequest(text="kettle today", metadata={"n": 6})]  # occurred = written
    )
    in_a = MemoryFilter(threads=("chat-a",))
    assert _numbers((await scoped.list(where=in_a)).entries) == [0, 1, 2]
    window = MemoryFilter(
        occurred_after=day + timedelta(days=2), occurred_before=day + timedelta(days=4)
    )
    assert _numbers((await scoped.list(where=window)).entries) == [2, 3]
    recent = MemoryFilter(occurred_after=datetime.now(UTC) - timedelta(hours=1))
    assert _numbers((await scoped.list(where=recent)).entries) == [6]
    for mode in ("fts", "vector"):
        both = MemoryFilter(threads=("chat-b",), occurred_before=day + timedelta(days=4))
        page = await scoped.search(
            SearchMemoryRequest(query="kettle", mode=mode, filter=both, min_similarity=-1)  # type: ignore[arg-type]
        )
        assert _numbers(page.hits) == [3], mode
