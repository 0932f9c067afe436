"""The full-text channel's search: the scope's statistics, the plan and the exact MaxScore
passes (the plan, the bounds and the SQL of each pass are in maxscore.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from powercontext.memory.ports import FtsCandidate, FtsQuery
from powercontext.memory.search import bm25
from powercontext.memory.search.fields import FieldWeights
from powercontext.storage.postgres import fulltext, maxscore

Row = tuple[int, float, list[str]]


async def candidates(conn: AsyncConnection[TupleRow], query: FtsQuery) -> list[FtsCandidate]:
    """Versions active at the query's revision that hold any of its terms, best first."""
    base = fulltext.clean_terms(str(term) for term in query.terms)
    if not base or query.limit <= 0:
        return []
    # Each query term is scored over its own, neighbour and speaker fields (search.bm25).
    weights = query.fields or FieldWeights()
    lexemes = fulltext.clean_terms(
        f.prefix + term for term in base for f in bm25.scored_fields(weights)
    )
    wanted = lexemes + [fulltext.REPEAT_MARK + lexeme for lexeme in lexemes]
    # One statement, so the scope's totals and the terms' statistics agree.
    cur = await conn.execute(
        "SELECT s.head_revision, s.active_count, s.own_length_total, "
        "s.context_length_total, t.term, t.df, t.tf_max, t.tf_ratio_max FROM scopes s "
        "LEFT JOIN term_stats t ON t.scope_id = s.scope_id AND t.term = ANY(%s::text[]) "
        "WHERE s.scope_id = %s",
        (wanted, query.scope_id),
    )
    stats = await cur.fetchall()
    if not stats:
        return []
    head, active, own_total, context_total = (int(value) for value in stats[0][:4])
    frequencies = {row[4]: int(row[5]) for row in stats if row[4] is not None}
    most = query.term_ceiling(active)
    if most is not None:
        # The head's statistics, whatever the revision searched: a bound, not a score.
        base = [t for t in base if frequencies.get(t, 0) <= most]  # the own field's lexeme
        if not base:
            return []
    # At the head, the statistics describe exactly the versions searched: lexemes no version
    # holds are left out, and the stored peaks bound each term's part.
    peaks = (
        {
            row[4]: None if row[6] is None else fulltext.Peak(int(row[6]), float(row[7]))
            for row in stats
            if row[4] is not None
        }
        if head == query.revision
        else None
    )
    plan = maxscore.plan_ranking(
        base,
        frequencies,
        active,
        own_total,
        context_total,
        weights,
        peaks,
        query.common_term_entries,
    )
    if plan is None:
        return []
    async with conn.transaction():
        # A pass over many postings can cost more than jit_above_cost; compiling it would add
        # tens of milliseconds to a query of a few (no effect on servers built without LLVM).
        await conn.execute("SELECT set_config('jit', 'off', true)")
        rows = await _top(conn, plan, query)
        if len(rows) < query.limit and plan.matched < len(plan.terms):
            # Fewer versions hold a rarer term than asked for: the common terms find too.
            rows = await _top(conn, replace(plan, matched=len(plan.terms)), query)
    mark = fulltext.REPEAT_MARK
    return [
        FtsCandidate(
            key=key, score=score, tokens=frozenset(t for t in tokens if not t.startswith(mark))
        )
        for key, score, tokens in rows
    ]


async def _rank(
    conn: AsyncConnection[TupleRow],
    plan: maxscore.RankPlan,
    match: int | Sequence[str],
    query: FtsQuery,
) -> list[Row]:
    statement, params = maxscore.ranking_query(
        plan, match, query.scope_id, query.revision, query.limit, query.where
    )
    rows = await (await conn.execute(statement, params)).fetchall()
    return [(int(key), float(score), tokens) for key, score, tokens in rows]


async def _top(
    conn: AsyncConnection[TupleRow], plan: maxscore.RankPlan, query: FtsQuery
) -> list[Row]:
    """The exact top `limit` by MaxScore. The first pass scores every document holding one of
    the rarest terms; any other scores at most `ceiling`, the other terms' bounds summed. A
    further pass matches the documents whose other terms' bounds reach a lower score
    (maxscore.match_query) and scores them, which brings `ceiling` down to that score; the
    search stops once the limit-th score found reaches `ceiling`. The score matched is the
    limit-th score found; while fewer than `limit` documents were found, it steps down by
    GUESS_STEP, and after MAX_PASSES it matches every term that finds versions (the plan's
    `matched`: common terms only add to scores)."""
    limit = query.limit
    found: dict[int, Row] = {}

    def top() -> list[Row]:
        return sorted(found.values(), key=lambda row: (-row[1], row[0]))[:limit]

    async def score(match: int | Sequence[str]) -> None:
        for row in await _rank(conn, plan, match, query):
            found[row[0]] = row

    await score(plan.first_pass)
    if plan.first_pass == plan.matched:
        return top()
    ceiling = maxscore.rest_bound(plan)
    ceiling += maxscore.margin(ceiling)
    for step in range(maxscore.MAX_PASSES + 1):
        best = top()
        floor = best[-1][1] if len(best) >= limit else 0.0
        if len(best) >= limit and floor >= ceiling:
            return best
        # With `limit` documents found, the limit-th score is the threshold of the last pass:
        # a pass costs about the same at any threshold (the leading term's postings, read
        # once), so trying higher ones first only adds passes. Short of `limit`, guess lower
        # and lower scores until enough documents reach one.
        guess = floor if len(best) >= limit else maxscore.GUESS_STEP * ceiling
        if step == maxscore.MAX_PASSES:
            guess = floor
        if guess <= 0.0:  # too few found: every document holding any term
            await score(plan.matched)
            return top()
        await score(maxscore.match_query(plan, guess))
        ceiling = guess - maxscore.margin(guess)
    return top()
