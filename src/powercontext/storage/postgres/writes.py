"""The commit transaction: a compare-and-swap on the scope head, then the revision's rows.

The first statement swaps the head (`UPDATE scopes ... WHERE head_revision = expected`, or
the scope's first INSERT). It takes the scope row's lock, so a concurrent commit of the same
scope from any process waits, then re-evaluates the WHERE against the new head, updates
nothing and fails with a conflict. Everything after it happens under that lock: keys are
drawn from a sequence (so within a scope they follow commit order), versions are loaded with
COPY, and the transaction commits all of it or none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from powercontext.memory.errors import MemoryValidationError, NotFoundError
from powercontext.memory.ports import CommitResult, IdempotencyClaim, NewVersion, PlannedChange
from powercontext.storage.common import conflict, idempotency_record, version_fields
from powercontext.storage.postgres.fulltext import Peak, indexed_text

_VERSION_COLUMNS = (
    "scope_id, key, entry_id, entry_version_id, version, kind, text, metadata, created_at, "
    "added_revision, tokens, thread, occurred_at, own_length, context_length, term_counts"
)


class Retired(NamedTuple):
    entry_id: str
    lexemes: list[str]
    own_length: int
    context_length: int


class Lengths(NamedTuple):
    """Changes of a scope's statistics over its versions active at the head."""

    lexemes: Counter[str]
    """Document frequency gained (or lost, negative) per lexeme."""
    own: int = 0
    context: int = 0
    peaks: dict[str, Peak] | None = None
    """The peaks of the lexemes of the versions that became active (fulltext.Peak)."""


def merge_peaks(into: dict[str, Peak], peaks: dict[str, Peak]) -> None:
    for lexeme, peak in peaks.items():
        known = into.get(lexeme)
        into[lexeme] = peak if known is None else known.merge(peak)


async def current_head(conn: AsyncConnection[TupleRow], scope_id: str) -> int | None:
    cur = await conn.execute("SELECT head_revision FROM scopes WHERE scope_id = %s", (scope_id,))
    row = await cur.fetchone()
    return int(row[0]) if row else None


async def _swap_head(
    conn: AsyncConnection[TupleRow], scope_id: str, expected: int | None
) -> tuple[int, datetime, int]:
    """revision, commit time and active count at the old head."""
    if expected is None:
        cur = await conn.execute(
            "INSERT INTO scopes (scope_id, head_revision, active_count, lexeme_total, created_at)"
            " VALUES (%s, 1, 0, 0, clock_timestamp()) "
            "ON CONFLICT (scope_id) DO NOTHING RETURNING created_at, 0",
            (scope_id,),
        )
    else:
        # clock_timestamp() is read after the row lock is granted: created_at follows revisions.
        cur = await conn.execute(
            "UPDATE scopes SET head_revision = head_revision + 1 "
            "WHERE scope_id = %s AND head_revision = %s "
            "RETURNING clock_timestamp(), active_count",
            (scope_id, expected),
        )
    row = await cur.fetchone()
    if row is None:
        actual = await current_head(conn, scope_id)
        raise conflict(
            f"scope {scope_id!r} is at revision {actual or 0}, expected {expected or 0}",
            expected,
            actual,
        )
    return (expected or 0) + 1, row[0], int(row[1])


async def _draw_keys(conn: AsyncConnection[TupleRow], count: int) -> list[int]:
    """`count` increasing keys; drawn under the scope lock, so they follow commit order."""
    if count == 0:
        return []
    cur = await conn.execute(
        "SELECT nextval('entry_version_keys') FROM generate_series(1, %s)", (count,)
    )
    return sorted(int(row[0]) for row in await cur.fetchall())


async def _retire(
    conn: AsyncConnection[TupleRow],
    scope_id: str,
    revision: int,
    previous_ids: list[str],
    expected: int | None,
) -> dict[str, Retired]:
    """Close the versions' intervals; entry_id, lexemes and lengths of each. All must still be
    active."""
    if not previous_ids:
        return {}
    if len(set(previous_ids)) != len(previous_ids):
        raise conflict("one commit retires the same entry version twice", expected, expected)
    cur = await conn.execute(
        "UPDATE entry_versions SET removed_revision = %s "
        "WHERE scope_id = %s AND entry_version_id = ANY(%s::text[]) AND removed_revision IS NULL "
        "RETURNING entry_version_id, entry_id, tsvector_to_array(tokens), own_length, "
        "context_length",
        (revision, scope_id, previous_ids),
    )
    retired = {
        row[0]: Retired(row[1], list(row[2]), int(row[3]), int(row[4]))
        for row in await cur.fetchall()
    }
    gone = [version_id for version_id in previous_ids if version_id not in retired]
    if gone:
        raise conflict(
            f"entry version {gone[0]!r} does not exist or is no longer active", expected, expected
        )
    return retired


async def _copy_versions(
    conn: AsyncConnection[TupleRow],
    scope_id: str,
    revision: int,
    created_at: datetime,
    news: list[NewVersion],
) -> tuple[tuple[int, ...], Lengths]:
    """COPY the new versions; their keys and the statistics they add."""
    keys = tuple(await _draw_keys(conn, len(news)))
    gained: Counter[str] = Counter()
    peaks: dict[str, Peak] = {}
    own = context = 0
    if not news:
        return keys, Lengths(gained)
    cur = conn.cursor()
    async with cur.copy(f"COPY entry_versions ({_VERSION_COLUMNS}) FROM STDIN") as copy:
        for key, new in zip(keys, news, strict=True):
            indexed = indexed_text(new.index_tokens)
            gained.update(indexed.lexemes)
            merge_peaks(peaks, indexed.peaks)
            own += indexed.own_length
            context += indexed.context_length
            await copy.write_row(
                (
                    scope_id,
                    key,
                    *version_fields(new),
                    created_at,
                    revision,
                    indexed.literal,
                    new.thread,
                    new.occurred_at,
                    indexed.own_length,
                    indexed.context_length,
                    indexed.term_counts,
                )
            )
    return keys, Lengths(gained, own, context, peaks)


async def _copy_changes(
    conn: AsyncConnection[TupleRow],
    scope_id: str,
    revision: int,
    created_at: datetime,
    changes: Sequence[PlannedChange],
    retired: dict[str, Retired],
) -> None:
    cur = conn.cursor()
    async with cur.copy(
        "COPY changes (scope_id, revision, seq, op, entry_id, entry_version_id, "
        "previous_entry_version_id, reason, created_at) FROM STDIN"
    ) as copy:
        for seq, change in enumerate(changes, start=1):
            previous = change.previous_entry_version_id
            if change.new is not None:
                entry_id, version_id = change.new.entry_id, change.new.entry_version_id
            else:
                assert previous is not None
                entry_id, version_id = retired[previous].entry_id, previous
            await copy.write_row(
                (
                    scope_id,
                    revision,
                    seq,
                    change.op,
                    entry_id,
                    version_id,
                    previous,
                    change.reason,
                    created_at,
                )
            )


async def _update_statistics(
    conn: AsyncConnection[TupleRow],
    scope_id: str,
    change: Lengths,
    active_count: int | None = None,
) -> None:
    """Apply `change` to `term_stats`, `lexeme_total` and the field length totals (and set
    the active count, when given)."""
    delta = change.lexemes
    await conn.execute(
        "UPDATE scopes SET active_count = coalesce(%s, active_count), "
        "lexeme_total = greatest(lexeme_total + %s, 0), "
        "own_length_total = greatest(own_length_total + %s, 0), "
        "context_length_total = greatest(context_length_total + %s, 0) WHERE scope_id = %s",
        (active_count, sum(delta.values()), change.own, change.context, scope_id),
    )
    peaks = change.peaks or {}
    lost = sorted(term for term, count in delta.items() if count < 0)
    if lost:
        await conn.execute(
            "UPDATE term_stats t SET df = greatest(t.df + u.df, 0) "
            "FROM unnest(%s::text[], %s::bigint[]) AS u (term, df) "
            "WHERE t.scope_id = %s AND t.term = u.term",
            (lost, [delta[term] for term in lost], scope_id),
        )
    gained = sorted({term for term, count in delta.items() if count > 0} | peaks.keys())
    if gained:
        # A peak only grows; a row of unknown peaks (null, from before migration 6) with
        # active versions stays unknown, and a row without any takes the new ones.
        await conn.execute(
            "INSERT INTO term_stats (scope_id, term, df, tf_max, tf_ratio_max) "
            "SELECT %s, term, df, tf, ratio "
            "FROM unnest(%s::text[], %s::bigint[], %s::integer[], %s::float8[]) "
            "AS u (term, df, tf, ratio) "
            "ON CONFLICT (scope_id, term) DO UPDATE SET df = term_stats.df + EXCLUDED.df, "
            "tf_max = CASE WHEN term_stats.df <= 0 THEN EXCLUDED.tf_max "
            "WHEN term_stats.tf_max IS NULL THEN NULL "
            "ELSE greatest(term_stats.tf_max, EXCLUDED.tf_max) END, "
            "tf_ratio_max = CASE WHEN term_stats.df <= 0 THEN EXCLUDED.tf_ratio_max "
            "WHEN term_stats.tf_max IS NULL THEN NULL "
            "ELSE greatest(term_stats.tf_ratio_max, EXCLUDED.tf_ratio_max) END",
            (
                scope_id,
                gained,
                [max(delta[term], 0) for term in gained],
                [peaks[term].tf if term in peaks else None for term in gained],
                [peaks[term].ratio if term in peaks else None for term in gained],
            ),
        )


async def rewrite_tokens(
    conn: AsyncConnection[TupleRow], scope_id: str, items: Sequence[tuple[int, str]]
) -> None:
    """New derived tokens for stored versions, with `term_stats` and the scope's totals kept
    equal to what the versions active at the head hold. The scope row's lock orders this
    against commits of the same scope."""
    wanted = sorted({key for key, _ in items})
    async with conn.transaction():
        await conn.execute("SELECT 1 FROM scopes WHERE scope_id = %s FOR UPDATE", (scope_id,))
        cur = await conn.execute(
            "SELECT key, removed_revision IS NULL, tsvector_to_array(tokens), own_length, "
            "context_length FROM entry_versions WHERE scope_id = %s AND key = ANY(%s::bigint[])",
            (scope_id, wanted),
        )
        old = {
            int(key): (bool(active), list(lexemes), int(own), int(context))
            for key, active, lexemes, own, context in await cur.fetchall()
        }
        missing = [key for key in wanted if key not in old]
        if missing:
            raise NotFoundError(f"scope {scope_id!r} has no entry versions with keys {missing[:5]}")
        delta: Counter[str] = Counter()
        peaks: dict[str, Peak] = {}
        own = context = 0
        for key, tokens in dict(items).items():
            indexed = indexed_text(tokens)
            active, before, own_before, context_before = old[key]
            await conn.execute(
                "UPDATE entry_versions SET tokens = %s::tsvector, own_length = %s, "
                "context_length = %s, term_counts = %s::jsonb WHERE scope_id = %s AND key = %s",
                (
                    indexed.literal,
                    indexed.own_length,
                    indexed.context_length,
                    indexed.term_counts,
                    scope_id,
                    key,
                ),
            )
            if active:
                delta.update(indexed.lexemes)
                merge_peaks(peaks, indexed.peaks)
                delta.subtract(before)
                own += indexed.own_length - own_before
                context += indexed.context_length - context_before
        await _update_statistics(conn, scope_id, Lengths(delta, own, context, peaks))


async def commit(
    conn: AsyncConnection[TupleRow],
    scope_id: str,
    expected_head: int | None,
    changes: Sequence[PlannedChange],
    idempotency: IdempotencyClaim | None = None,
) -> CommitResult:
    """One transaction; the caller maps database errors (a unique violation is a conflict,
    including a second write under a recorded idempotency key)."""
    expected = expected_head or None  # 0 and None both mean "no revision yet"
    news = [change.new for change in changes if change.new is not None]
    previous_ids = [c.previous_entry_version_id for c in changes if c.previous_entry_version_id]
    async with conn.transaction():
        revision, created_at, active = await _swap_head(conn, scope_id, expected)
        retired = await _retire(conn, scope_id, revision, previous_ids, expected)
        for change in changes:
            previous = change.previous_entry_version_id
            new = change.new
            if (
                change.op == "revise"
                and new
                and previous
                and retired[previous].entry_id != new.entry_id
            ):
                raise MemoryValidationError(
                    f"revise of entry {new.entry_id!r} names a version of another entry"
                )
        active_count = active + len(news) - len(previous_ids)
        await conn.execute(
            "INSERT INTO revisions (scope_id, revision, created_at, active_count, change_count) "
            "VALUES (%s, %s, %s, %s, %s)",
            (scope_id, revision, created_at, active_count, len(changes)),
        )
        keys, added = await _copy_versions(conn, scope_id, revision, created_at, news)
        await _copy_changes(conn, scope_id, revision, created_at, changes, retired)
        for gone in retired.values():
            added.lexemes.subtract(gone.lexemes)
        statistics = Lengths(
            added.lexemes,
            added.own - sum(gone.own_length for gone in retired.values()),
            added.context - sum(gone.context_length for gone in retired.values()),
            added.peaks,
        )
        await _update_statistics(conn, scope_id, statistics, active_count)
        if idempotency is not None:
            await conn.execute(
                *idempotency_record(scope_id, idempotency, revision, keys, "postgres")
            )
    return CommitResult(revision=revision, created_at=created_at, keys=keys)
