"""Contract: `revision=N` on search answers exactly what the scope held at revision N."""

from __future__ import annotations

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.errors import NotFoundError
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.service import MemoryService


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
async def test_search_at_a_revision_sees_that_revision_only(store: MemoryStore, mode: str) -> None:
    service = MemoryService(store, embedder=HashingEmbedder(dimension=64))
    memory = service.for_scope("asof")
    kettle = (await memory.remember(RememberMemoryRequest(text="the kettle is green"))).entries[0]
    await memory.remember(RememberMemoryRequest(text="the kettle boils fast"))  # r2
    revised = await memory.revise(  # r3
        ReviseMemoryRequest(citation=kettle.citation, text="the kettle is red")
    )
    await memory.retire(RetireMemoryRequest(citation=revised.entries[0].citation))  # r4

    def texts(page: object) -> set[str]:
        return {hit.text for hit in page.hits}  # type: ignore[attr-defined]

    query = "kettle green red boils"
    at = {
        r: await memory.search(SearchMemoryRequest(query=query, mode=mode, revision=r))  # type: ignore[arg-type]
        for r in (1, 2, 3, 4)
    }
    assert texts(at[1]) == {"the kettle is green"}
    assert texts(at[2]) == {"the kettle is green", "the kettle boils fast"}
    assert texts(at[3]) == {"the kettle is red", "the kettle boils fast"}
    assert texts(at[4]) == {"the kettle boils fast"}
    assert all(hit.memory_ref.revision == 2 for hit in at[2].hits)
    assert at[2].memory_ref is not None and at[2].memory_ref.revision == 2
    head = await memory.search(SearchMemoryRequest(query=query, mode=mode))  # type: ignore[arg-type]
    assert texts(head) == texts(at[4])
    with pytest.raises(NotFoundError):
        await memory.search(SearchMemoryRequest(query=query, mode=mode, revision=5))  # type: ignore[arg-type]
