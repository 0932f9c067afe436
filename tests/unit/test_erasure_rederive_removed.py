"""After an erasure, a failing embedder leaves no erased word in any version's tokens: the
retired neighbours' tokens are rewritten before any vector is embedded."""

from __future__ import annotations

import logging

import pytest

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore
from tests.breakable_embedder import BreakableEmbedder


async def test_a_failed_re_embedding_leaves_no_erased_word_in_a_retired_neighbour(
    caplog: pytest.LogCaptureFixture,
) -> None:
    embedder = BreakableEmbedder()
    config = SearchConfig(index=IndexTextConfig(context_before=1, context_after=1))
    async with await SqliteMemoryStore.open(":memory:") as store:
        memory = MemoryService(store, embedder=embedder, config=config).for_scope("s")
        first = await memory.remember(RememberMemoryRequest(text="morning walk", thread="t"))
        secret = await memory.remember(RememberMemoryRequest(text="zebracorn", thread="t"))
        await memory.remember(RememberMemoryRequest(text="evening tea", thread="t"))
        await memory.retire(RetireMemoryRequest(citation=first.entries[0].citation))
        before = SearchMemoryRequest(query="zebracorn", mode="fts", revision=3)
        found = {hit.text for hit in (await memory.search(before)).hits}
        assert found == {"morning walk", "zebracorn", "evening tea"}
        embedder.broken = True
        with caplog.at_level(logging.ERROR, logger="powercontext.memory"):
            result = await memory.forget(secret.entries[0].entry_id)
        assert result.erased_versions == 1
        assert "reindex --rebuild" in caplog.text
        for revision in (1, 2, 3, 4, 5):
            request = SearchMemoryRequest(query="zebracorn", mode="fts", revision=revision)
            assert (await memory.search(request)).hits == ()
