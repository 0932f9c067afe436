"""The PostgreSQL backend stays ready for Citus: scope_id is the distribution key everywhere.

Citus can distribute a table by `scope_id` and route a statement to one worker only when the
table's primary key and unique constraints start with (or contain) `scope_id`, its foreign
keys carry it, and the statement filters by one `scope_id` value (joins between distributed
tables are on `scope_id` too). No Citus server can be started here, so these tests check the
invariants on the real schema and on every statement the backend sends while the runtime
runs a full workload (writes, every search mode, reads, reindex).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.memory import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from tests import pg_server

pytestmark = pytest.mark.postgres

DOCS = Path(__file__).resolve().parents[2] / "docs" / "postgres.md"
GLOBAL_TABLES = {"schema_migrations"}
"""Bookkeeping of the coordinator (a Citus reference or local table)."""
CROSS_SCOPE = {'SELECT scope_id FROM scopes ORDER BY scope_id COLLATE "C"'}
"""The statements that read every scope on purpose, which Citus runs on every worker: the
enumeration of scopes behind the vector backfill and a whole-runtime reindex."""
_PARAM = r"(%s|%b|%\(\w+\)s|\$\d+)"
_SCOPE_FILTER = re.compile(rf"\b(?:\w+\.)?scope_id\s*=\s*{_PARAM}", re.IGNORECASE)
# Schema changes, which Citus propagates to every shard. LOCK TABLE comes with them: it guards
# the once-per-profile CREATE INDEX of a vector index (storage/postgres/vectors.py).
_DDL = re.compile(r"^\s*(CREATE|ALTER|DROP|DO|SET|SHOW|BEGIN|COMMIT|ROLLBACK|LOCK)\b", re.I)


def _schema(url: str) -> str:
    return re.search(r"search_path%3D(\w+)", url).group(1)  # type: ignore[union-attr]


async def _tables(url: str) -> set[str]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (_schema(url),),
        )
        return {row[0] for row in await cur.fetchall()}


async def _constraints(url: str) -> list[tuple[str, str, str, list[str], list[str]]]:
    """(table, constraint, type, columns, referenced columns) of every key constraint."""
    query = """
        SELECT c.conrelid::regclass::text, c.conname, c.contype,
               array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
                     JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
                     ORDER BY k.i),
               array(SELECT a.attname FROM unnest(coalesce(c.confkey, '{}')) WITH ORDINALITY
                     k(n, i) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n
                     ORDER BY k.i)
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = %s AND c.contype IN ('p', 'u', 'f')
    """
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(query, (_schema(url),))
        return [(r[0], r[1], r[2], list(r[3]), list(r[4])) for r in await cur.fetchall()]


async def _unique_indexes(url: str) -> list[tuple[str, str, str]]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes "
            "WHERE schemaname = %s AND indexdef LIKE 'CREATE UNIQUE%%'",
            (_schema(url),),
        )
        return [(r[0], r[1], r[2]) for r in await cur.fetchall()]


def _settings(url: str) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=url), inference=InferenceConfig(embedding_model="hash")
    )


async def test_every_table_is_keyed_by_scope_id_first(tmp_path: Path) -> None:
    url = await pg_server.database_url(tmp_path)
    async with open_runtime(_settings(url)) as rt:  # migrates, and makes a vector index
        memory = rt.memory.for_scope("s")
        await memory.remember(RememberMemoryRequest(text="a vector makes a profile index"))
    distributed = await _tables(url) - GLOBAL_TABLES
    assert {"scopes", "revisions", "entry_versions", "changes", "entry_vectors"} <= distributed
    keyed: set[str] = set()
    for table, name, kind, columns, referenced in await _constraints(url):
        table = table.split(".")[-1]
        if table in GLOBAL_TABLES:
            continue
        assert columns[0] == "scope_id", f"{table}.{name} does not start with scope_id"
        if kind == "f":
            assert referenced[0] == "scope_id", f"{table}.{name} references no scope_id"
        if kind == "p":
            keyed.add(table)
    assert keyed == distributed, f"tables without a primary key: {distributed - keyed}"
    documented = set(re.findall(r"create_distributed_table\('(\w+)'", DOCS.read_text("utf-8")))
    assert documented == distributed, "docs/postgres.md must distribute exactly these tables"
    for table, name, definition in await _unique_indexes(url):
        if table not in GLOBAL_TABLES:
            assert re.search(r"\(scope_id\b", definition), f"{name}: {definition}"


class _Recorder:
    """Every statement text the backend's psycopg cursors execute or copy."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def text(self, query: Any, cursor: Any) -> str:
        if isinstance(query, sql.Composable):
            return query.as_string(cursor.connection)
        return query.decode() if isinstance(query, bytes) else str(query)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        recorder = self
        execute, executemany = psycopg.AsyncCursor.execute, psycopg.AsyncCursor.executemany
        copy = psycopg.AsyncCursor.copy

        async def traced_execute(cur: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.statements.append(recorder.text(query, cur))
            return await execute(cur, query, *args, **kwargs)

        async def traced_executemany(cur: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.statements.append(recorder.text(query, cur))
            return await executemany(cur, query, *args, **kwargs)

        def traced_copy(cur: Any, statement: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.statements.append(recorder.text(statement, cur))
            return copy(cur, statement, *args, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", traced_execute)
        monkeypatch.setattr(psycopg.AsyncCursor, "executemany", traced_executemany)
        monkeypatch.setattr(psycopg.AsyncCursor, "copy", traced_copy)


def _touched(statement: str, tables: set[str]) -> set[str]:
    return {t for t in tables if re.search(rf"\b{t}\b", statement, re.IGNORECASE)}


def _problems(statement: str, tables: set[str]) -> Iterator[str]:
    """Why a statement could not be routed to the one worker that holds its scope."""
    touched = _touched(statement, tables)
    flat = " ".join(statement.split())
    if not touched or _DDL.match(statement) or flat in CROSS_SCOPE:
        return
    if re.match(r"^(INSERT INTO|COPY)\b", flat, re.IGNORECASE):
        if not re.search(r"\(\s*scope_id\b", flat, re.IGNORECASE):
            yield "writes rows without scope_id as their first column"
        return
    if not _SCOPE_FILTER.search(flat):
        yield "has no `scope_id = <parameter>` filter"
    for join in re.finditer(
        r"\bJOIN\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?\s+(ON|USING)\b(.*?)(?=\bJOIN\b|\bWHERE\b|\bGROUP\b|\bORDER\b|\bLIMIT\b|\)|$)",
        flat,
        re.IGNORECASE,
    ):
        if "scope_id" not in join.group(4):
            yield f"joins {join.group(1)} on something other than scope_id"
    if re.search(r"\bFROM\s+\w+(?:\s+\w+)?\s*,\s*\w+", flat, re.IGNORECASE):
        yield "uses a comma join"


async def test_every_statement_filters_by_one_scope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = await pg_server.database_url(tmp_path)
    async with open_runtime(_settings(url)) as rt:  # migrations are not under test
        pass
    tables = await _tables(url) - GLOBAL_TABLES
    recorder = _Recorder()
    recorder.install(monkeypatch)
    async with open_runtime(_settings(url)) as rt:
        memory = rt.memory.for_scope("tenant-a")
        other = rt.memory.for_scope("tenant-b")
        await other.remember(RememberMemoryRequest(text="another tenant's note about deploys"))
        one = await memory.remember(RememberMemoryRequest(text="We deploy on Fridays."))
        batch = await memory.remember_many(
            [RememberMemoryRequest(kind="fact", text=f"fact {i} about deploys") for i in range(5)]
        )
        citation = one.entries[0].citation
        revised = await memory.revise(ReviseMemoryRequest(citation=citation, text="Tuesdays."))
        await memory.retire(RetireMemoryRequest(citation=batch.entries[0].citation))
        for mode in ("fts", "vector", "hybrid", "auto"):
            await memory.search(SearchMemoryRequest(query="when do we deploy", mode=mode))
        await memory.get(citation)
        await memory.get(revised.entries[0].citation)
        await memory.list()
        await memory.get_entry(citation.entry_id, revision=2)
        await memory.history(citation.entry_id)
        keyed = RememberMemoryRequest(text="once", idempotency_key="k")
        await memory.remember(keyed)
        await memory.remember(keyed)
        await memory.changes()
        await memory.head()
        await memory.pending_vectors()
        await memory.reindex()
    assert recorder.statements, "no statement was recorded"
    problems = [
        f"{reason}: {' '.join(statement.split())[:300]}"
        for statement in recorder.statements
        for reason in _problems(statement, tables)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("SELECT head_revision FROM scopes WHERE scope_id = %s", None),
        ("SELECT text FROM entry_versions WHERE key = %s", "no `scope_id"),
        (
            "SELECT 1 FROM entry_vectors e JOIN entry_versions v ON v.key = e.key "
            "WHERE e.scope_id = %s",
            "joins entry_versions",
        ),
        ("INSERT INTO changes (revision, scope_id) VALUES (%s, %s)", "without scope_id"),
        ("SELECT 1 FROM scopes s, revisions r WHERE s.scope_id = %s", "comma join"),
    ],
)
def test_the_statement_check_flags_what_citus_cannot_route(
    statement: str, problem: str | None
) -> None:
    tables = {"scopes", "revisions", "entry_versions", "entry_vectors", "changes"}
    found = list(_problems(statement, tables))
    if problem is None:
        assert found == []
    else:
        assert any(problem in reason for reason in found), found
