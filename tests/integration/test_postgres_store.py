"""What the PostgreSQL adapter adds beyond the shared contract: migrations, error mapping,
URLs, and the HNSW path that only large revisions take."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from powercontext.memory.errors import ConfigurationError, StorageError
from powercontext.memory.ports import CommitRequest, FtsQuery, VectorQuery
from powercontext.storage import open_store
from powercontext.storage.postgres import (
    SCHEMA_VERSION,
    PostgresMemoryStore,
    schema,
    upgrade,
    vectors,
)
from powercontext.storage.postgres.connection import split_url
from tests import pg_server
from tests.contract.builders import add, random_units, retire, revise

pytestmark = pytest.mark.postgres


@pytest.fixture
async def url(tmp_path: Path) -> str:
    return await pg_server.database_url(tmp_path)


@pytest.fixture
async def store(url: str) -> AsyncIterator[PostgresMemoryStore]:
    opened = await PostgresMemoryStore.open(url)
    try:
        yield opened
    finally:
        await opened.close()


async def test_upgrade_applies_each_migration_once(tmp_path: Path) -> None:
    url = await pg_server.database_url(tmp_path / "fresh", unmigrated=True)
    assert await upgrade(url) == list(range(1, SCHEMA_VERSION + 1))
    assert await upgrade(url) == []
    store = await open_store(url)  # the URL dispatch the runtime uses
    try:
        assert isinstance(store, PostgresMemoryStore)
        assert await store.scope_ids() == []
    finally:
        await store.close()


async def test_concurrent_opens_migrate_once(url: str) -> None:
    stores = await asyncio.gather(*(PostgresMemoryStore.open(url) for _ in range(3)))
    for opened in stores:
        await opened.close()
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT version FROM schema_migrations ORDER BY version")
        assert [row[0] for row in await cur.fetchall()] == list(range(1, SCHEMA_VERSION + 1))


async def test_a_newer_schema_is_refused(url: str) -> None:
    await upgrade(url)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (999,))
    try:
        with pytest.raises(StorageError, match="newer"):
            await PostgresMemoryStore.open(url)
    finally:  # the schema is handed to later tests (tests/pg_server.py): leave it current
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("DELETE FROM schema_migrations WHERE version = %s", (999,))


async def test_database_failures_surface_as_storage_errors(store: PostgresMemoryStore) -> None:
    with pytest.raises(StorageError, match="PostgreSQL storage failed while connecting"):
        await PostgresMemoryStore.open("postgresql://nobody@/x?host=/nonexistent-socket-dir")
    await store.close()
    with pytest.raises(StorageError, match="reading the head"):
        await store.head("s")


def test_pool_sizes_ride_on_the_url_and_never_reach_libpq() -> None:
    conninfo, options = split_url(
        "postgresql://u:p@db.example:5433/mem?sslmode=require&pool_max_size=20&pool_min_size=2"
    )
    assert conninfo == "postgresql://u:p@db.example:5433/mem?sslmode=require"
    assert (options.min_size, options.max_size) == (2, 20)
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_DATABASE_URL"):
        split_url("postgresql://db/mem?pool_max_size=zero")
    with pytest.raises(ConfigurationError, match="exceeds"):
        split_url("postgresql://db/mem?pool_min_size=9&pool_max_size=2")


def test_the_candidate_list_widens_with_the_graph_and_stays_within_pgvector_bounds() -> None:
    assert vectors.ef_search(30) == vectors.ef_search(30, active=200_000) == 256
    assert vectors.ef_search(40, active=100_000) == 320
    assert vectors.ef_search(30, active=1_000_000) == 573  # 256 x sqrt(5)
    assert vectors.ef_search(40, active=1_000_000) == 573
    assert vectors.ef_search(120, active=1_000_000) == 960
    assert vectors.ef_search(120, active=100_000_000) == 1000  # pgvector's bound
    assert vectors.ef_search(30, configured=64, active=1_000_000) == 64  # the URL's, as given
    assert vectors.ef_search(100, configured=64) == 100


async def _plan(
    store: PostgresMemoryStore,
    query: np.ndarray,
    revision: int,
    cast: str = vectors.INDEX_CAST,
    scope: str = "big",
) -> str:
    statement = vectors.nearest_query("p", query.shape[0], exact=False, cast=cast)
    async with store._connection("explaining") as conn, conn.transaction():
        await conn.execute(vectors.ANN_SETTINGS, vectors.ann_settings(30))
        cur = await conn.execute(
            psycopg.sql.SQL("EXPLAIN ") + statement, (query, scope, revision, revision, 30)
        )
        return "\n".join(row[0] for row in await cur.fetchall())


async def test_large_revisions_walk_the_hnsw_graph_and_stay_filtered(
    store: PostgresMemoryStore,
) -> None:
    count, dimension = vectors.EXACT_SCAN_UP_TO + 1000, 16
    result = await store.commit(
        CommitRequest("big", None, [add(f"entry {i}") for i in range(count)])
    )
    matrix = random_units(count, dimension, seed=11)
    for start in range(0, count, 1000):
        batch = range(start, min(start + 1000, count))
        await store.put_vectors("big", "p", [(result.keys[i], matrix[i]) for i in batch])
    query = random_units(1, dimension, seed=12)[0]
    assert vectors.index_name("p") in await _plan(store, query, 1)

    approximate = await store.vector_candidates(VectorQuery("big", 1, "p", query, limit=30))
    exact = await store.vector_candidates(VectorQuery("big", 1, "p", query, limit=100), exact=True)
    assert [c.key for c in exact] == [result.keys[i] for i in np.argsort(-(matrix @ query))[:100]]
    recall = len({c.key for c in approximate} & {c.key for c in exact[:30]}) / 30
    assert recall >= 0.8, recall
    # The walk orders by half precision, but what it returns is scored in full, as exactly.
    exact_similarity = {c.key: c.similarity for c in exact}
    for candidate in approximate:
        if candidate.key in exact_similarity:
            assert candidate.similarity == pytest.approx(exact_similarity[candidate.key], abs=1e-12)

    # Another scope's vectors right next to the query, and the 100 nearest versions of this
    # scope retired: the graph's nearest 600 tuples all fail the filters, yet the walk goes on.
    noise = await store.commit(
        CommitRequest("noise", None, [add(f"other {i}") for i in range(500)])
    )
    near = query + 0.05 * random_units(500, dimension, seed=13)
    await store.put_vectors("noise", "p", list(zip(noise.keys, near, strict=True)))
    versions = await store.fetch_versions("big", [c.key for c in exact])
    await store.commit(CommitRequest("big", 1, [retire(versions[c.key]) for c in exact]))
    retired = {c.key for c in exact}
    unit = query / np.linalg.norm(query)
    async with store._connection("walking the graph alone") as conn:  # no exact fallback
        walked = await store._search(conn, "p", dimension, (unit, "big", 2, 2, 30), 30, False)
    assert len(walked) == 30 and not {key for key, _ in walked} & retired
    found = await store.vector_candidates(VectorQuery("big", 2, "p", query, limit=30))
    assert len(found) == 30 and not {c.key for c in found} & retired
    assert {c.key for c in found} <= set(result.keys)
    similarities = [c.similarity for c in found]
    assert similarities == sorted(similarities, reverse=True)
    # The old revision is still searchable as it was.
    again = await store.vector_candidates(VectorQuery("big", 1, "p", query, limit=30))
    assert [c.key for c in again] == [c.key for c in approximate]


async def test_a_graph_built_before_half_precision_is_still_walked(url: str) -> None:
    first = await PostgresMemoryStore.open(url)
    count, dimension = vectors.EXACT_SCAN_UP_TO + 200, 8
    result = await first.commit(CommitRequest("old", None, [add(f"e{i}") for i in range(count)]))
    matrix = random_units(count, dimension, seed=21)
    await first.put_vectors("old", "p", list(zip(result.keys, matrix, strict=True)))
    async with first._connection("rebuilding the graph as before") as conn:
        assert await vectors.indexed_cast(conn, "p") == (vectors.INDEX_CAST, dimension)
        await conn.execute(f"DROP INDEX {vectors.index_name('p')}")
        await conn.execute(
            f"CREATE INDEX {vectors.index_name('p')} ON entry_vectors USING hnsw "
            f"((embedding::vector({dimension})) vector_cosine_ops) WHERE profile_id = 'p'"
        )
    await first.close()
    store = await PostgresMemoryStore.open(url)  # a process started after the upgrade
    try:
        query = random_units(1, dimension, seed=22)[0]
        assert vectors.index_name("p") in await _plan(store, query, 1, "vector", "old")
        walked = await store.vector_candidates(VectorQuery("old", 1, "p", query, limit=20))
        exact = await store.vector_candidates(
            VectorQuery("old", 1, "p", query, limit=20), exact=True
        )
        assert len({c.key for c in walked} & {c.key for c in exact}) >= 16
    finally:
        await store.close()


async def test_two_stores_create_a_new_profiles_index_once(url: str) -> None:
    first = await PostgresMemoryStore.open(url)
    second = await PostgresMemoryStore.open(url)
    try:
        result = await first.commit(CommitRequest("s", None, [add(f"e{i}") for i in range(4)]))
        items = list(zip(result.keys, random_units(4, 8, seed=1), strict=True))
        await asyncio.gather(
            first.put_vectors("s", "fresh", items[:2]), second.put_vectors("s", "fresh", items[2:])
        )
        assert await first.missing_vector_count("s", 1, "fresh") == 0
    finally:
        await first.close()
        await second.close()


async def test_the_bm25_migration_backfills_lengths_and_rebuild_makes_counts_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = await pg_server.database_url(tmp_path / "old", unmigrated=True)
    before = schema.MIGRATIONS[: schema.MIGRATIONS.index(schema._V_BM25)]
    monkeypatch.setattr(schema, "MIGRATIONS", before)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(before))
    await upgrade(url)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO scopes VALUES ('s', 1, 2, 7, now());"
            "INSERT INTO revisions VALUES ('s', 1, now(), 2, 2);"
            "INSERT INTO entry_versions (scope_id, key, entry_id, entry_version_id, version, "
            "kind, text, metadata, created_at, added_revision, tokens) VALUES "
            "('s', 1, 'e1', 'v1', 1, 'fact', 'a', '{}', now(), 1, $$'kayak' 'lake' '_sun'$$),"
            "('s', 2, 'e2', 'v2', 1, 'fact', 'b', '{}', now(), 1, $$'kayak' '@ann' '_x' '_y'$$);"
            "INSERT INTO term_stats VALUES ('s', 'kayak', 2), ('s', 'lake', 1), ('s', '_sun', 1),"
            "('s', '@ann', 1), ('s', '_x', 1), ('s', '_y', 1)"
        )
    monkeypatch.undo()
    assert await upgrade(url) == list(range(len(before) + 1, SCHEMA_VERSION + 1))
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT key, own_length, context_length, term_counts FROM entry_versions ORDER BY key"
        )
        assert await cur.fetchall() == [(1, 2, 1, None), (2, 1, 2, None)]
        cur = await conn.execute("SELECT own_length_total, context_length_total FROM scopes")
        assert await cur.fetchone() == (3, 3)
        # migration 6: each lexeme's peak count and count per length of its field
        cur = await conn.execute("SELECT term, tf_max, tf_ratio_max FROM term_stats ORDER BY term")
        assert await cur.fetchall() == [
            ("@ann", 1, 1.0),
            ("_sun", 1, 1.0),
            ("_x", 1, 0.5),
            ("_y", 1, 0.5),
            ("kayak", 1, 1.0),
            ("lake", 1, 0.5),
        ]
    store = await PostgresMemoryStore.open(url)
    try:
        # the shorter entry first, as BM25 ranks one occurrence each
        assert [
            c.key for c in await store.fts_candidates(FtsQuery("s", 1, ["kayak"], limit=5))
        ] == [2, 1]
        # what `reindex --rebuild` does: the rewritten tokens carry their repeats again
        await store.rewrite_index_tokens("s", [(1, "kayak kayak kayak lake _sun")])
        assert [
            c.key for c in await store.fts_candidates(FtsQuery("s", 1, ["kayak"], limit=5))
        ] == [1, 2]
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT own_length, term_counts FROM entry_versions WHERE key = 1")
        assert await cur.fetchone() == (4, {"kayak": 3})
        cur = await conn.execute(
            "SELECT term, df, tf_max, tf_ratio_max FROM term_stats"
            " WHERE term IN ('kayak', 'lake', chr(31) || 'kayak') ORDER BY term COLLATE \"C\""
        )
        # a word's own peaks count it once; its marker's, where it repeats
        assert await cur.fetchall() == [
            ("\x1fkayak", 1, 3, 0.75),
            ("kayak", 2, 1, 1.0),
            ("lake", 1, 1, 0.5),
        ]
        cur = await conn.execute("SELECT own_length_total, context_length_total FROM scopes")
        assert await cur.fetchone() == (5, 3)


async def test_length_totals_follow_commits_retirements_and_rewrites(url: str) -> None:
    store = await PostgresMemoryStore.open(url)
    try:
        first = await store.commit(
            CommitRequest(
                "s",
                None,
                [add("a", tokens="kayak kayak lake _sun"), add("b", tokens="tent @ann _x")],
            )
        )
        rows = await store.fetch_versions("s", first.keys)
        await store.commit(
            CommitRequest(
                "s", 1, [retire(rows[first.keys[0]]), revise(rows[first.keys[1]], "b2"), add("c")]
            )
        )
        await store.rewrite_index_tokens("s", [(first.keys[0], "kayak _a _b _c")])  # retired
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT s.own_length_total, s.context_length_total, sum(v.own_length), "
            "sum(v.context_length) FROM scopes s JOIN entry_versions v USING (scope_id) "
            "WHERE v.removed_revision IS NULL GROUP BY 1, 2"
        )
        row = await cur.fetchone()
        assert row is not None and (row[0], row[1]) == (row[2], row[3]) == (2, 0)
        cur = await conn.execute(
            "SELECT own_length, context_length, term_counts FROM entry_versions WHERE key = %s",
            (first.keys[0],),
        )
        assert await cur.fetchone() == (1, 3, None)
