"""PostgreSQL erasure keeps the full-text statistics equal to the versions left, and drops
every term row that named only erased words."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from powercontext.memory.ports import CommitRequest, ErasureRequest
from powercontext.storage.postgres import PostgresMemoryStore
from tests import pg_server
from tests.contract.builders import add

pytestmark = pytest.mark.postgres


@pytest.fixture
async def url(tmp_path: Path) -> str:
    return await pg_server.database_url(tmp_path)


async def test_statistics_follow_the_erasure(url: str) -> None:
    store = await PostgresMemoryStore.open(url)
    try:
        await store.commit(
            CommitRequest(
                "s",
                None,
                [
                    add("a", entry_id="gone", tokens="zebracorn lake _sun"),
                    add("b", entry_id="kept", tokens="lake tent"),
                ],
            )
        )
        result = await store.erase(ErasureRequest("s", 1, ["gone"], actor="key:abc", reason=None))
        assert result.revision == 2 and [v.entry_id for v in result.erased] == ["gone"]
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT s.active_count, s.own_length_total, s.context_length_total, s.lexeme_total, "
            "count(v.key), sum(v.own_length), sum(v.context_length), "
            "sum(cardinality(tsvector_to_array(v.tokens))) "
            "FROM scopes s JOIN entry_versions v USING (scope_id) GROUP BY 1, 2, 3, 4"
        )
        row = await cur.fetchone()
        assert row is not None and row[:4] == row[4:] == (1, 2, 0, 2)
        cur = await conn.execute("SELECT term, df FROM term_stats ORDER BY term")
        assert await cur.fetchall() == [("lake", 1), ("tent", 1)]
        cur = await conn.execute("SELECT active_count FROM revisions ORDER BY revision")
        assert await cur.fetchall() == [(1,), (1,)]
