"""After an erasure, a failing re-embedding of the neighbours does not undo or hide the
erasure: the call succeeds, the tokens are re-derived, and the failure is logged as an error."""

from __future__ import annotations

import logging

import pytest

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore
from tests.breakable_embedder import BreakableEmbedder


async def test_a_failed_re_embedding_is_logged_and_the_erasure_stands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    embedder = BreakableEmbedder()
    config = SearchConfig(index=IndexTextConfig(context_before=1, context_after=1))
    async with await SqliteMemoryStore.open(":memory:") as store:
        memory = MemoryService(store, embedder=embedder, config=config).for_scope("s")
        await memory.remember(RememberMemoryRequest(text="morning walk", thread="t"))
        secret = await memory.remember(RememberMemoryRequest(text="zebracorn", thread="t"))
        embedder.broken = True
        with caplog.at_level(logging.ERROR, logger="powercontext.memory"):
            result = await memory.forget(secret.entries[0].entry_id)
        assert result.erased_versions == 1
        assert "reindex --rebuild" in caplog.text and "zebracorn" not in caplog.text
        page = await memory.search(SearchMemoryRequest(query="zebracorn", mode="fts"))
        assert page.hits == ()  # the tokens were re-derived before the vectors failed
