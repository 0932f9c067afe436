"""A data-protection audit of `forget` on PostgreSQL, black box: marked entries are written
through the runtime, read every way (search with a cached rerank, export, change feed,
idempotent writes), erased, and then every column of every table of the schema is cast to
text and searched for the marker, tsvector and json included. What may stay is what
docs/http.md ("Erasure") names: revisions, the change log's ids, the `forget` changes (with
the erasure's own reason and actor) and one tombstone per version (ids, revision, actor).

Each test first shows the marker is stored (the control), so the checks after the erasure
can fail. The scenario is shared with the SQLite cross-check (test_audit_erasure_sqlite.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from powercontext import Runtime, ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from powercontext.inference.pydantic_ai import PydanticAIListwiseReranker
from powercontext.memory import RememberMemoryRequest, ReviseMemoryRequest, SearchMemoryRequest
from powercontext.memory.erasure import ForgetMemoryRequest, ForgetScopeRequest
from powercontext.memory.errors import ErasedError, RevisionConflictError
from powercontext.memory.models import MemoryCitation, MemoryEntry, MemoryWriteResult
from tests import pg_server

pytestmark = pytest.mark.postgres

MARK = "qjxv"
"""In every marked value: the text (both versions), metadata, a speaker (indexed), a thread
and the reasons of the marked writes. Lower-case letters, so tokens keep it whole."""
GDPR = "GDPR request 118"


def settings(url: str) -> tuple[ServerSettings, PydanticAIListwiseReranker]:
    """Hash vectors, contextual indexing (the default) and a cached rerank by a FunctionModel."""

    async def first(_messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"ranks": [1]})])

    reranker = PydanticAIListwiseReranker(FunctionModel(first), timeout_seconds=5.0, max_requests=1)
    return (
        ServerSettings(
            database=DatabaseConfig(url=url),
            inference=InferenceConfig(embedding_model="hash"),
            runtime={"memory_rerank_cache_ttl_seconds": 600},
        ),
        reranker,
    )


@dataclass
class Written:
    batch: list[RememberMemoryRequest]
    batch_result: MemoryWriteResult
    secret: MemoryEntry
    revised: MemoryEntry
    revise: ReviseMemoryRequest
    solo_request: RememberMemoryRequest
    solo: MemoryEntry
    export: list[str]

    @property
    def survivor_texts(self) -> list[str]:
        return [r.text for r in self.batch if MARK not in r.text]

    @property
    def erased_citations(self) -> list[MemoryCitation]:
        return [self.secret.citation, self.revised.citation, self.solo.citation]


async def marked_scope(rt: Runtime, scope_id: str) -> Written:
    """A batch whose middle entry is marked, in a thread with survivors (their tokens and
    vectors take its words), that entry revised, a marked entry alone in a marked thread, all
    keyed; then searched (rerank cached), exported and read from the change feed."""
    memory = rt.memory.for_scope(scope_id)
    batch = [
        RememberMemoryRequest(text="survivor alpha about lunch", thread="chat-1", **_key("b")),
        RememberMemoryRequest(
            text=f"my {MARK}text holiday plan",
            thread="chat-1",
            metadata={"tag": f"{MARK}meta", "speaker": f"{MARK}speaker"},
            reason=f"{MARK}reason",
            **_key("b"),
        ),
        RememberMemoryRequest(text="survivor bravo about dinner", thread="chat-1", **_key("b")),
        RememberMemoryRequest(text="survivor charlie without thread", **_key("b")),
    ]
    batch_result = await memory.remember_many(batch)
    secret = batch_result.entries[1]
    revise = ReviseMemoryRequest(
        citation=secret.citation,
        text=f"my {MARK}revised holiday plan",
        metadata={"tag": f"{MARK}meta2"},
        reason=f"{MARK}why",
        idempotency_key="revise-key",
    )
    (revised,) = (await memory.revise(revise)).entries
    solo_request = RememberMemoryRequest(
        text=f"{MARK}solo note", thread=f"{MARK}thread", idempotency_key="solo-key"
    )
    (solo,) = (await memory.remember(solo_request)).entries
    for _ in range(2):  # the second search is served by the rerank cache
        for mode in ("fts", "vector", "hybrid"):
            page = await memory.search(SearchMemoryRequest(query=f"{MARK}revised", mode=mode))
            assert page.rerank is not None
    page = await memory.search(SearchMemoryRequest(query=f"{MARK}text", mode="fts", revision=1))
    assert page.hits and MARK in page.hits[0].text  # the control: as-of finds it
    assert page.rerank is not None and page.rerank.cache_hit is False
    export = [line async for line in memory.export_lines()]
    assert MARK in "".join(export)
    changes = (await memory.changes()).changes
    assert MARK in json.dumps([c.model_dump(mode="json") for c in changes])
    return Written(batch, batch_result, secret, revised, revise, solo_request, solo, export)


def _key(name: str) -> dict[str, str]:
    return {"idempotency_key": f"{name}-key"}


def _leaks(value: object) -> bool:
    return MARK in json.dumps(value, default=str)


async def erase_and_check(rt: Runtime, scope_id: str, written: Written) -> None:
    """Forget the marked entries, then read the scope back every way a client can."""
    memory = rt.memory.for_scope(scope_id)
    request = ForgetMemoryRequest(
        entry_ids=(written.secret.entry_id, written.solo.entry_id),
        reason=GDPR,
        idempotency_key="forget-key",
    )
    result = await memory.forget(request, actor="dpo")
    assert result.erased_versions == 3
    assert (await memory.forget(request, actor="dpo")) == result  # a keyed retry, not a 410
    head = (await memory.head()).revision  # type: ignore[union-attr]
    for revision in range(1, head + 1):
        for mode in ("fts", "vector", "hybrid"):
            for query in (f"{MARK}revised", f"{MARK}text holiday plan", "holiday"):
                page = await memory.search(
                    SearchMemoryRequest(query=query, mode=mode, revision=revision)
                )
                assert not _leaks(page.model_dump(mode="json")), (revision, mode, query)
    for citation in written.erased_citations:
        with pytest.raises(ErasedError):
            await memory.get(citation)
    for entry_id in (written.secret.entry_id, written.solo.entry_id):
        with pytest.raises(ErasedError):
            await memory.get_entry(entry_id)
        history = await memory.history(entry_id)  # ids only, by design
        assert history.versions == () and history.active_version is None
        assert history.changes[0].op == "forget" and not _leaks(history.model_dump(mode="json"))
    for revision in range(1, head + 1):
        lines = [line async for line in memory.export_lines(revision=revision)]
        assert MARK not in "".join(lines), revision
    changes = (await memory.changes()).changes
    assert not _leaks([c.model_dump(mode="json") for c in changes])
    # No replay of a keyed write gives the erased text back, nor writes it again.
    with pytest.raises(ErasedError):
        await memory.remember_many(written.batch)
    with pytest.raises(ErasedError):
        await memory.revise(written.revise)
    with pytest.raises(ErasedError):
        await memory.remember(written.solo_request)
    # Nor does importing an export taken before the erasure.
    skipped = await memory.import_lines(written.export, on_existing="skip")
    assert skipped.skipped == 5 and skipped.added == 0  # 3 survivors present, 2 erased
    with pytest.raises(RevisionConflictError):
        await memory.import_lines(written.export, on_existing="replace")


async def marker_cells(url: str, needle: str = MARK) -> list[tuple[str, str, int]]:
    """(table, column, rows) of every column of the schema whose text holds `needle`."""
    found = []
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        )
        columns = await cur.fetchall()
        assert len({t for t, _ in columns}) >= 9  # every table of the schema, not a few
        for table, column in columns:
            query = sql.SQL("SELECT count(*) FROM {} WHERE {}::text ILIKE %s").format(
                sql.Identifier(table), sql.Identifier(column)
            )
            cur = await conn.execute(query, (f"%{needle}%",))
            row = await cur.fetchone()
            if row is not None and row[0]:
                found.append((table, column, int(row[0])))
    return found


async def rows(url: str, statement: str, *params: object) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(statement, params)
        return list(await cur.fetchall())


@pytest.fixture
async def url(tmp_path: Path) -> str:
    return await pg_server.database_url(tmp_path)


@pytest.fixture
async def runtime(url: str) -> AsyncIterator[Runtime]:
    configured, reranker = settings(url)
    async with open_runtime(configured, memory_reranker=reranker) as rt:
        yield rt


async def test_forget_leaves_the_marker_in_no_column(runtime: Runtime, url: str) -> None:
    written = await marked_scope(runtime, "s")
    before = {(t, c) for t, c, _ in await marker_cells(url)}
    assert {
        ("entry_versions", "text"),
        ("entry_versions", "metadata"),
        ("entry_versions", "thread"),
        ("entry_versions", "tokens"),
        ("changes", "reason"),
    } <= before
    erased_ids = [written.secret.entry_id, written.solo.entry_id]
    statement = "SELECT key FROM entry_versions WHERE entry_id = ANY(%s)"
    keys = [k for (k,) in await rows(url, statement, erased_ids)]
    assert len(keys) == 3  # the secret's two versions and the solo entry
    assert await rows(url, "SELECT 1 FROM entry_vectors WHERE key = ANY(%s)", keys)

    await erase_and_check(runtime, "s", written)

    assert await marker_cells(url) == []
    assert await rows(url, "SELECT 1 FROM entry_vectors WHERE key = ANY(%s)", keys) == []
    # The tombstones keep ids, the version number and the actor; the forget changes the
    # erasure's own reason. Nothing else of the erased entries is left.
    tombstones = await rows(
        url, "SELECT entry_id, version, actor FROM erased_versions ORDER BY entry_id, version"
    )
    expected = [(written.secret.entry_id, v, "dpo") for v in (1, 2)]
    assert sorted(tombstones) == sorted([*expected, (written.solo.entry_id, 1, "dpo")])
    # The keyed writes keep their records (a hash, no text): that is what answers a replay 410.
    keyed = await rows(url, "SELECT idempotency_key FROM idempotency_keys ORDER BY 1")
    assert {"b-key", "revise-key", "solo-key", "forget-key"} <= {k for (k,) in keyed}
    forgets = await rows(url, "SELECT reason, actor FROM changes WHERE op = 'forget'")
    assert forgets == [(GDPR, "dpo")] * 3
    texts = {t for (t,) in await rows(url, "SELECT text FROM entry_versions")}
    assert texts == set(written.survivor_texts)


async def test_forget_scope_then_write_again(runtime: Runtime, url: str) -> None:
    written = await marked_scope(runtime, "s")
    memory = runtime.memory.for_scope("s")
    result = await memory.forget_scope(ForgetScopeRequest(reason="closure"), actor="dpo")
    assert result.erased_versions == len(written.survivor_texts) + 3
    assert await marker_cells(url) == []
    assert await marker_cells(url, "survivor") == []
    assert await rows(url, "SELECT count(*) FROM entry_vectors") == [(0,)]
    assert await rows(url, "SELECT count(*) FROM term_stats") == [(0,)]
    with pytest.raises(ErasedError):
        await memory.remember_many(written.batch)
    again = await memory.remember(RememberMemoryRequest(text="a fresh start after closure"))
    assert result.memory_ref is not None
    assert again.memory_ref.revision == result.memory_ref.revision + 1
    page = await memory.search(SearchMemoryRequest(query="fresh start"))
    assert [h.text for h in page.hits] == ["a fresh start after closure"]
    for citation in written.erased_citations:
        with pytest.raises(ErasedError):
            await memory.get(citation)
    assert await marker_cells(url) == []
    assert await marker_cells(url, "survivor") == []


async def test_a_batch_survives_the_forget_of_one_of_its_entries(
    runtime: Runtime, url: str
) -> None:
    written = await marked_scope(runtime, "s")
    memory = runtime.memory.for_scope("s")
    await memory.forget(ForgetMemoryRequest(entry_ids=(written.secret.entry_id,)))
    for text in written.survivor_texts:
        page = await memory.search(SearchMemoryRequest(query=text.split()[1], mode="fts"))
        assert text in [h.text for h in page.hits], text
        page = await memory.search(SearchMemoryRequest(query=text, mode="vector"))
        assert page.hits[0].text == text
    survivors = [e for e in written.batch_result.entries if e.text in written.survivor_texts]
    for entry in survivors:
        assert (await memory.get(entry.citation)) == entry  # the batch's citations still hold
    # Only the solo entry (not erased here) still holds the marker: its row and its word.
    cells = {(t, c) for t, c, _ in await marker_cells(url)}
    row = {("entry_versions", c) for c in ("text", "thread", "tokens")}
    assert cells == {*row, ("term_stats", "term")}
    statement = "SELECT term FROM term_stats WHERE term LIKE %s"
    assert await rows(url, statement, f"%{MARK}%") == [(f"{MARK}solo",)]


async def test_no_term_row_outlives_the_words_of_the_erased_entry(
    runtime: Runtime, url: str
) -> None:
    """The neighbours index the erased words as context terms (`_word`); once they are
    re-derived no version holds those, so no term row may name them either."""
    written = await marked_scope(runtime, "s")
    statement = "SELECT term FROM term_stats WHERE term LIKE %s ORDER BY term"
    assert (f"_{MARK}text",) in await rows(url, statement, f"%{MARK}%")  # the control
    memory = runtime.memory.for_scope("s")
    await memory.forget(ForgetMemoryRequest(entry_ids=(written.secret.entry_id,)))
    assert await rows(url, statement, f"%{MARK}%") == [(f"{MARK}solo",)]
    held = "SELECT DISTINCT unnest(tsvector_to_array(tokens)) FROM entry_versions"
    assert {t for (t,) in await rows(url, "SELECT term FROM term_stats")} <= {
        t for (t,) in await rows(url, held)
    }
