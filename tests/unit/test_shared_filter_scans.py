"""The embedded store scans a filter once per search (and per batch), shared by its channels."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore, reads
from powercontext.storage.sqlite.filter_keys import Keys, SharedFilterScans

EVEN = MemoryFilter.model_validate({"metadata": {"parity": {"eq": "even"}}})
ODD = MemoryFilter.model_validate({"metadata": {"parity": {"eq": "odd"}}})


@pytest.fixture
async def service() -> AsyncIterator[MemoryService]:
    store = await SqliteMemoryStore.open(":memory:")
    service = MemoryService(store, embedder=HashingEmbedder(dimension=32))
    await service.remember_many(
        "s",
        [
            RememberMemoryRequest(
                text=f"kettle note {i}", metadata={"parity": "even" if i % 2 == 0 else "odd"}
            )
            for i in range(40)
        ],
    )
    yield service
    await store.close()


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every filter scan the store runs, by its filter."""
    seen: list[Any] = []
    original = reads.filtered_keys

    def counting(conn: Any, query: Any) -> Any:
        seen.append(query.where)
        return original(conn, query)

    monkeypatch.setattr(reads, "filtered_keys", counting)
    return seen


def _search(where: MemoryFilter | None, mode: str = "hybrid") -> SearchMemoryRequest:
    return SearchMemoryRequest.model_validate(
        {"query": "kettle note", "mode": mode, "limit": 5, "filter": where, "min_similarity": -1}
    )


async def test_a_hybrid_search_scans_its_filter_once(
    service: MemoryService, scans: list[Any]
) -> None:
    page = await service.search("s", _search(EVEN))
    assert len(page.hits) == 5 and all(h.metadata["parity"] == "even" for h in page.hits)
    assert {"fts", "vector"} <= {c for h in page.hits for c in h.matched_by}
    assert scans == [EVEN], "both channels used one scan"


async def test_a_batch_shares_a_scan_per_distinct_filter(
    service: MemoryService, scans: list[Any]
) -> None:
    pages = await service.search_batch("s", [_search(EVEN)] * 4 + [_search(ODD)] * 2)
    assert sorted(map(str, scans)) == sorted(map(str, [EVEN, ODD]))
    assert all(h.metadata["parity"] == "odd" for h in pages[5].hits)


async def test_no_filter_no_scan_and_finished_scans_are_not_kept(
    service: MemoryService, scans: list[Any]
) -> None:
    await service.search("s", _search(None))
    assert scans == []
    await service.search("s", _search(EVEN, "vector"))
    await service.search("s", _search(EVEN, "vector"))
    assert scans == [EVEN, EVEN], "a later search scans again (nothing is cached)"


async def test_a_cancelled_waiter_does_not_cancel_the_shared_scan() -> None:
    shared = SharedFilterScans()
    release = asyncio.Event()

    async def scan() -> Keys | None:
        await release.wait()
        return np.array([1, 2], dtype=np.int64)

    first = asyncio.create_task(shared.keys("s", 1, EVEN, scan))
    second = asyncio.create_task(shared.keys("s", 1, EVEN, scan))
    await asyncio.sleep(0)
    first.cancel()
    release.set()
    keys = await second
    assert keys is not None and keys.tolist() == [1, 2]
    assert shared.scans == 1
    assert await shared.keys("s", 1, None, scan) is None
