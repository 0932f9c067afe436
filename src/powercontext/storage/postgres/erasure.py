"""Erasure in the PostgreSQL store: DELETE in one transaction, then VACUUM by the operator.

`erase` takes the scope row's lock (`FOR UPDATE`, as every commit does first), checks the
head, deletes the versions' vectors and rows (their tsvector goes with the row), lowers the
term statistics by what the erased active versions held and drops terms no version holds
any more (a term is a word of the text), then records a tombstone and a `forget` change per
version, clears the reasons of their older changes and blanks the body hashes of the keyed
writes that touched the erased entries.

A DELETE makes rows invisible; their bytes stay in the table and index pages (and in WAL
segments, archives and backups) until VACUUM reclaims the space and the pages are rewritten.
PowerContext does not vacuum by itself (a plain VACUUM of a large table is heavy and autovacuum
usually follows soon); docs/postgres.md gives the guidance: `VACUUM` the tables
`entry_versions`, `entry_vectors`, `term_stats`, `changes` and `idempotency_keys` after an
erasure, `VACUUM FULL` (exclusive lock) to rewrite the files, and expire WAL archives and
backups per policy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from powercontext.memory.idempotency import ERASED_BODY_HASH
from powercontext.memory.ports import (
    NOTHING_ERASED,
    ErasureRequest,
    ErasureResult,
    StoredVersion,
    Tombstone,
    TombstoneQuery,
)
from powercontext.storage.common import (
    ERASED_COLUMNS,
    VERSION_COLUMNS,
    ErasedRow,
    erased_active_counts,
    erased_version,
    erasure_head,
    erasure_key_record,
    erasure_records,
    tombstone_from_row,
    tombstone_query,
    version_from_row,
)
from powercontext.storage.postgres import reads
from powercontext.storage.postgres.writes import Lengths, _update_statistics


async def _doomed_rows(
    conn: AsyncConnection[TupleRow], scope_id: str, entry_ids: Sequence[str] | None
) -> list[ErasedRow]:
    select = f"SELECT {ERASED_COLUMNS} FROM entry_versions WHERE scope_id = %s"
    if entry_ids is None:
        cur = await conn.execute(select + " ORDER BY key", (scope_id,))
    else:
        cur = await conn.execute(
            select + " AND entry_id = ANY(%s::text[]) ORDER BY key",
            (scope_id, sorted(set(entry_ids))),
        )
    return [
        (int(r[0]), r[1], r[2], int(r[3]), int(r[4]), None if r[5] is None else int(r[5]), r[6])
        for r in await cur.fetchall()
    ]


async def erase(conn: AsyncConnection[TupleRow], request: ErasureRequest) -> ErasureResult:
    scope_id = request.scope_id
    async with conn.transaction():
        cur = await conn.execute(
            "SELECT head_revision, active_count FROM scopes WHERE scope_id = %s FOR UPDATE",
            (scope_id,),
        )
        row = await cur.fetchone()
        head = erasure_head(request, None if row is None else int(row[0]))
        active = int(row[1]) if row else 0
        doomed = await _doomed_rows(conn, scope_id, request.entry_ids)
        if not doomed:
            for sql, rows in erasure_key_record(request, head, "postgres", NOTHING_ERASED):
                await conn.cursor().executemany(sql, rows)
            return ErasureResult(revision=None, erased=())
        revision = head + 1
        counts = erased_active_counts(doomed, head)
        cur = await conn.execute(
            "UPDATE scopes SET head_revision = %s WHERE scope_id = %s RETURNING clock_timestamp()",
            (revision, scope_id),
        )
        stamp = await cur.fetchone()
        assert stamp is not None  # the row is locked above
        erased_at = stamp[0]
        remaining = max(active - counts.get(head, 0), 0)
        await conn.cursor().executemany(
            "UPDATE revisions SET active_count = greatest(active_count - %s, 0) "
            "WHERE scope_id = %s AND revision = %s",
            [(count, scope_id, at) for at, count in counts.items()],
        )
        await conn.execute(
            "INSERT INTO revisions (scope_id, revision, created_at, active_count, change_count) "
            "VALUES (%s, %s, %s, %s, %s)",
            (scope_id, revision, erased_at, remaining, len(doomed)),
        )
        keys = [r[0] for r in doomed]
        await conn.execute(
            "DELETE FROM entry_vectors WHERE scope_id = %s AND key = ANY(%s::bigint[])",
            (scope_id, keys),
        )
        cur = await conn.execute(
            "DELETE FROM entry_versions WHERE scope_id = %s AND key = ANY(%s::bigint[]) "
            "RETURNING removed_revision IS NULL, tsvector_to_array(tokens), own_length, "
            "context_length",
            (scope_id, keys),
        )
        lost: Counter[str] = Counter()
        own = context = 0
        for was_active, terms, own_length, context_length in await cur.fetchall():
            if was_active:
                lost.subtract(terms)
                own += int(own_length)
                context += int(context_length)
        await _update_statistics(conn, scope_id, Lengths(lost, -own, -context), remaining)
        # A term row names a word: one that no version holds any more goes with the text.
        await conn.execute("DELETE FROM term_stats WHERE scope_id = %s AND df <= 0", (scope_id,))
        erased_entries = sorted({r[1] for r in doomed})
        await conn.execute(
            "UPDATE changes SET reason = NULL WHERE scope_id = %s AND entry_id = ANY(%s::text[])",
            (scope_id, erased_entries),
        )
        # The keyed writes (whole batches) whose changes touched an erased entry lose their
        # body hash: a hash of the erased text confirms a guess of it. Earlier erasures' keys
        # hash ids only.
        await conn.execute(
            "UPDATE idempotency_keys SET body_hash = %s WHERE scope_id = %s AND revision IN "
            "(SELECT revision FROM changes WHERE scope_id = %s AND op <> 'forget' "
            "AND entry_id = ANY(%s::text[]))",
            (ERASED_BODY_HASH, scope_id, scope_id, erased_entries),
        )
        for sql, rows in erasure_records(request, doomed, revision, erased_at, "postgres"):
            await conn.cursor().executemany(sql, rows)
    return ErasureResult(revision=revision, erased=tuple(erased_version(r) for r in doomed))


async def scrub(conn: AsyncConnection[TupleRow], scope_id: str) -> None:
    """After the neighbours of erased versions are re-derived (memory.erasure): their context
    terms (`_` + a word of the erased text) were still counted when `erase` dropped the terms
    at zero, and re-deriving only lowers the counts, so the words would stay as term rows."""
    await conn.execute("DELETE FROM term_stats WHERE scope_id = %s AND df <= 0", (scope_id,))


async def tombstones(conn: AsyncConnection[TupleRow], query: TombstoneQuery) -> list[Tombstone]:
    if query.entry_ids is not None:  # an id no row can hold finds nothing, the others still do
        kept = tuple(i for i in query.entry_ids if reads.findable((i,)))
        query = TombstoneQuery(query.scope_id, entry_ids=kept)
    sql, params = tombstone_query(query, "postgres")
    if not reads.findable(params):
        return []
    cur = await conn.execute(sql, params)
    return [tombstone_from_row(row, row[4]) for row in await cur.fetchall()]


# An erasure's revision holds `forget` changes only (and a write's none): the first change of
# each revision after the one asked tells, one primary-key probe per revision, however many
# entries the writes in between added.
_ERASED_SINCE = (
    "SELECT 1 FROM revisions r WHERE r.scope_id = %s AND r.revision > %s AND ("
    "SELECT c.op FROM changes c WHERE c.scope_id = r.scope_id AND c.revision = r.revision "
    "ORDER BY c.seq LIMIT 1) = 'forget' LIMIT 1"
)


async def erased_since(conn: AsyncConnection[TupleRow], scope_id: str, revision: int) -> bool:
    """MemoryStore.erased_since."""
    cur = await conn.execute(
        _ERASED_SINCE,
        (scope_id, revision),
    )
    return await cur.fetchone() is not None


async def removed_versions(
    conn: AsyncConnection[TupleRow],
    scope_id: str,
    threads: Sequence[str] | None,
    batches: Sequence[int] | None,
) -> list[StoredVersion]:
    """The inactive members of the sequences named (MemoryStore.removed_versions)."""
    thread = "thread IS NOT NULL" if threads is None else "thread = ANY(%s::text[])"
    batch = "TRUE" if batches is None else "added_revision = ANY(%s::bigint[])"
    named: list[object] = []
    if threads is not None:
        named.append(sorted(set(threads)))
    if batches is not None:
        named.append(sorted(set(batches)))
    cur = await conn.execute(
        f"SELECT {VERSION_COLUMNS} FROM entry_versions "
        "WHERE scope_id = %s AND removed_revision IS NOT NULL "
        f"AND ((version = 1 AND {thread}) OR (thread IS NULL AND {batch})) ORDER BY key",
        (scope_id, *named),
    )
    return [version_from_row(row) for row in await cur.fetchall()]


async def delete_vectors(
    conn: AsyncConnection[TupleRow], scope_id: str, keys: Sequence[int], keep_profile: str | None
) -> None:
    """MemoryStore.delete_vectors; the scope's deletion count moves with them (every process's
    missing-vector hints read it)."""
    wanted = sorted(set(keys))
    async with conn.transaction():
        if keep_profile is None:
            cur = await conn.execute(
                "DELETE FROM entry_vectors WHERE scope_id = %s AND key = ANY(%s::bigint[])",
                (scope_id, wanted),
            )
        else:
            cur = await conn.execute(
                "DELETE FROM entry_vectors WHERE scope_id = %s AND key = ANY(%s::bigint[]) "
                "AND profile_id <> %s",
                (scope_id, wanted, keep_profile),
            )
        if cur.rowcount:
            await conn.execute(
                "UPDATE scopes SET vector_deletions = vector_deletions + 1 WHERE scope_id = %s",
                (scope_id,),
            )
