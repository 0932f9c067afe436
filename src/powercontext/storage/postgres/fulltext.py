"""The full-text channel: tsvector literals, safe tsqueries and an IDF-weighted ranking.

The analyzer's tokens are written as a tsvector *literal* (quoted lexemes) and
query terms as quoted tsquery lexemes, so no PostgreSQL parser, dictionary or stop list ever
sees user text: the `simple` configuration's job (keep tokens as they are) is done exactly,
CJK grams included, and query syntax characters are inert.

Ranking. PostgreSQL's ts_rank and ts_rank_cd know no document frequency, so a query such as
"what did the team decide" would rank documents full of "the" and "what" first. The score is
search.bm25's BM25F, the SQLite channel's formula, written in SQL: each version stores its own
and context lengths (`own_length`, `context_length`) and the counts of its tokens that repeat
(`term_counts`, null when none does; a lexeme in `tokens` but not there occurs once). N, df_t
and the average lengths are taken over the versions active at the head (`scopes`,
`term_stats`).

Scoring every document that shares any common word is what makes full-text search slow at a
million entries, so the search runs MaxScore-style in up to two passes: first over the
documents containing one of the rarest terms (a bounded number of rows), each scored with
all terms; a document without any of those terms scores at most bm25.MAX_SATURATION times the
other terms' idf sum, and when the first pass's limit-th score beats that bound its order is
final. Otherwise the second pass matches on every term except the commonest ones whose
combined bound stays below that limit-th score (often "the", "what", ...), scoring with all of
them again. Both passes give exactly the order a full scan would.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from psycopg import AsyncConnection, sql
from psycopg.rows import TupleRow

from powercontext.memory.ports import FtsCandidate, FtsQuery
from powercontext.memory.search import bm25
from powercontext.memory.search.fields import CONTEXT_PREFIX, FieldWeights, own_length
from powercontext.storage.filter_sql import filter_sql

MAX_SCORED_TERMS = 64
"""Queries longer than this are matched and scored by their rarest 64 distinct terms."""
FIRST_PASS_DF_BUDGET = 4096
"""The first pass takes the rarest terms while their document frequencies sum to at most this."""
MAX_LEXEME_BYTES = 2046


def quote_lexeme(token: str) -> str:
    """A lexeme quoted for tsvector and tsquery input: nothing inside is syntax."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def _clean(token: str) -> str:
    # PostgreSQL text cannot hold NUL, and rejects lexemes over 2046 bytes; the analyzer makes
    # neither (words stop at 64 characters), so only hand-made tokens lose anything here.
    token = token.replace("\x00", "")
    return token if len(token.encode("utf-8")) <= MAX_LEXEME_BYTES else ""


def tsvector_literal(index_tokens: str) -> tuple[str, list[str]]:
    """The tsvector input text of space-joined tokens and its distinct lexemes (first-seen
    order). No positions: the ranking needs only membership and the lexeme count."""
    if "\x00" in index_tokens or len(index_tokens) > MAX_LEXEME_BYTES:
        lexemes = clean_terms(index_tokens.split())
    else:
        lexemes = list(dict.fromkeys(index_tokens.split()))
    if not lexemes:
        return "", lexemes
    if "'" in index_tokens or "\\" in index_tokens:
        return " ".join(map(quote_lexeme, lexemes)), lexemes
    return "'" + "' '".join(lexemes) + "'", lexemes


def clean_terms(terms: Iterable[str]) -> list[str]:
    """Distinct usable terms in first-seen order."""
    return [t for t in dict.fromkeys(_clean(term) for term in terms) if t]


def term_query(terms: Iterable[str]) -> str:
    """A tsquery matching any of `terms` ('a' | 'b' | ...)."""
    return " | ".join(quote_lexeme(term) for term in terms)


@dataclass(frozen=True, slots=True)
class IndexedText:
    """What one version's index tokens become in its row."""

    literal: str
    lexemes: list[str]
    own_length: int
    context_length: int
    term_counts: str | None
    """JSON of the lexemes that occur more than once and their counts; None when none does."""


def indexed_text(index_tokens: str) -> IndexedText:
    literal, lexemes = tsvector_literal(index_tokens)
    tokens = index_tokens.split()
    repeats = {term: n for term, n in Counter(clean_terms_all(tokens)).items() if n > 1}
    return IndexedText(
        literal=literal,
        lexemes=lexemes,
        own_length=own_length(tokens),
        context_length=sum(1 for token in tokens if token.startswith(CONTEXT_PREFIX)),
        term_counts=json.dumps(repeats, ensure_ascii=False) if repeats else None,
    )


def clean_terms_all(tokens: Iterable[str]) -> list[str]:
    """Every usable token, repeats kept."""
    return [t for t in map(_clean, tokens) if t]


@dataclass(frozen=True, slots=True)
class RankPlan:
    terms: tuple[str, ...]
    """Distinct usable query terms, rarest first, at most MAX_SCORED_TERMS."""
    weights: tuple[float, ...]
    """Each term's idf."""
    fields: tuple[bm25.Field, ...]
    first_pass: int
    """How many of the rarest terms the first pass matches on."""
    own_average: float
    context_average: float

    def lexemes(self, terms: int) -> list[str]:
        """The indexed lexemes (every scored field) of the first `terms` terms."""
        return [field.prefix + term for term in self.terms[:terms] for field in self.fields]


def plan_ranking(
    terms: Sequence[str],
    frequencies: Mapping[str, int],
    total: int,
    own_total: int,
    context_total: int,
    fields: FieldWeights | None = None,
) -> RankPlan | None:
    """`frequencies` holds the df of each field lexeme (`word`, `_word`, `@word`)."""
    scored = bm25.scored_fields(fields or FieldWeights())
    distinct = [t for t in clean_terms(terms) if all(_clean(f.prefix + t) for f in scored)]
    if not distinct:
        return None

    def field_dfs(term: str) -> list[int]:
        return [frequencies.get(field.prefix + term, 0) for field in scored]

    dfs = {term: bm25.term_df(field_dfs(term)) for term in distinct}
    # Rarest first; ties keep the query's order so the plan is deterministic.
    ranked = sorted(distinct, key=lambda t: dfs[t])[:MAX_SCORED_TERMS]
    first, budget = 0, 0
    for term in ranked:
        budget += sum(field_dfs(term))
        if first and budget > FIRST_PASS_DF_BUDGET:
            break
        first += 1
    return RankPlan(
        terms=tuple(ranked),
        weights=tuple(bm25.idf(dfs[t], total) for t in ranked),
        fields=scored,
        first_pass=first,
        own_average=bm25.average_length(own_total, total),
        context_average=bm25.average_length(context_total, total),
    )


_NORMS = {"own": sql.SQL("n_own"), "context": sql.SQL("n_context")}


def _tilde(plan: RankPlan, term: str, params: list[object]) -> sql.Composable:
    """tf~ of one term (bm25.weighted_tf summed over the fields), in SQL."""
    parts: list[sql.Composable] = []
    for field in plan.fields:
        lexeme = field.prefix + term
        params.extend((quote_lexeme(lexeme), lexeme, field.weight))
        part = sql.SQL(
            "(CASE WHEN tokens @@ %s::tsquery"
            " THEN coalesce((term_counts ->> %s)::float8, 1) ELSE 0 END * %s::float8)"
        )
        norm = None if field.norm is None else _NORMS[field.norm]
        parts.append(part if norm is None else sql.SQL("{} / {}").format(part, norm))
    return sql.SQL("(") + sql.SQL(" + ").join(parts) + sql.SQL(")")


def ranking_query(
    plan: RankPlan, match_terms: int, query: FtsQuery
) -> tuple[sql.Composed, list[object]]:
    """The candidates query and its parameters: it matches versions active at the query's
    revision that contain one of the first `match_terms` terms (in any field) and scores them
    with all of the plan's. OFFSET 0 keeps each tf~ computed once, not once per use."""
    clause, filter_params = filter_sql(query.where, "postgres")
    # Parameters in the order their placeholders appear: scores, tf~, norms, match, limit.
    params: list[object] = []
    for weight in plan.weights:
        params.extend((weight, bm25.K1 + 1.0, bm25.K1))
    saturated = sql.SQL(" + ").join(
        sql.SQL("(%s::float8 * t{i} * %s::float8 / (t{i} + %s::float8))").format(i=sql.Literal(i))
        for i in range(len(plan.terms))
    )
    tildes = sql.SQL(", ").join(
        [
            sql.SQL("{} AS t{}").format(_tilde(plan, term, params), sql.Literal(i))
            for i, term in enumerate(plan.terms)
        ]
    )
    statement = sql.SQL(
        "SELECT key, score, tsvector_to_array(tokens) FROM ("
        " SELECT key, tokens, ({saturated}) AS score FROM ("
        "  SELECT key, tokens, {tildes} FROM ("
        "   SELECT key, tokens, term_counts,"
        "   %s::float8 - %s::float8 + %s::float8 * own_length / %s::float8 AS n_own,"
        "   %s::float8 - %s::float8 + %s::float8 * context_length / %s::float8 AS n_context"
        "   FROM entry_versions"
        "   WHERE scope_id = %s AND tokens @@ %s::tsquery AND added_revision <= %s"
        "   AND (removed_revision IS NULL OR removed_revision > %s){clause} OFFSET 0"
        "  ) normed OFFSET 0"
        " ) tilded ORDER BY score DESC, key LIMIT %s"
        ") ranked ORDER BY score DESC, key"
    ).format(saturated=saturated, tildes=tildes, clause=sql.SQL(clause))
    params.extend((1.0, bm25.B, bm25.B, plan.own_average))
    params.extend((1.0, bm25.B, bm25.B, plan.context_average))
    params.extend((query.scope_id, term_query(plan.lexemes(match_terms))))
    params.extend((query.revision, query.revision, *filter_params, query.limit))
    return statement, params


def terms_to_match(plan: RankPlan, scores: Sequence[float], limit: int) -> int:
    """How many of the rarest terms a pass must match on so that no document it skips could
    enter the top `limit`, given the scores a pass over the first `plan.first_pass` found.

    A document containing only the commonest terms scores at most bm25.MAX_SATURATION times
    their idf sum; those terms can be left out of the match while that bound stays below the
    limit-th score found so far (a real document's exact score, so a lower bound of the final
    one). When the answer is `plan.first_pass`, the first pass was final.
    """
    if len(scores) < limit:
        return len(plan.terms)  # the skipped documents may be needed to fill the limit
    threshold = min(scores)
    margin = 1e-9 * max(1.0, threshold)  # float sums in SQL and here may differ in the last bit
    keep, bound = len(plan.terms), 0.0
    while keep > plan.first_pass:
        widened = bound + bm25.MAX_SATURATION * plan.weights[keep - 1]
        if widened + margin >= threshold:
            break
        keep, bound = keep - 1, widened
    return keep


async def candidates(conn: AsyncConnection[TupleRow], query: FtsQuery) -> list[FtsCandidate]:
    """Versions active at the query's revision that hold any of its terms, best first: the
    store's full-text channel (see the module docstring for the ranking)."""
    base = clean_terms(str(term) for term in query.terms)
    if not base or query.limit <= 0:
        return []
    scope_id = query.scope_id
    # Each query term is scored over its own, neighbour and speaker fields (search.bm25).
    weights = query.fields or FieldWeights()
    wanted = clean_terms(f.prefix + term for term in base for f in bm25.scored_fields(weights))
    cur = await conn.execute(
        "SELECT active_count, own_length_total, context_length_total FROM scopes "
        "WHERE scope_id = %s",
        (scope_id,),
    )
    scope = await cur.fetchone()
    if scope is None:
        return []
    cur = await conn.execute(
        "SELECT term, df FROM term_stats WHERE scope_id = %s AND term = ANY(%s::text[])",
        (scope_id, wanted),
    )
    frequencies = {row[0]: int(row[1]) for row in await cur.fetchall()}
    plan = plan_ranking(base, frequencies, int(scope[0]), int(scope[1]), int(scope[2]), weights)
    if plan is None:
        return []
    statement, params = ranking_query(plan, plan.first_pass, query)
    rows = await (await conn.execute(statement, params)).fetchall()
    needed = terms_to_match(plan, [row[1] for row in rows], query.limit)
    if needed > plan.first_pass:
        statement, params = ranking_query(plan, needed, query)
        rows = await (await conn.execute(statement, params)).fetchall()
    return [
        FtsCandidate(key=int(key), score=float(score), tokens=frozenset(tokens))
        for key, score, tokens in rows
    ]
