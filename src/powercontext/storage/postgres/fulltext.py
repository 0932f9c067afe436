"""The full-text channel: tsvector literals, safe tsqueries and an IDF-weighted ranking.

The analyzer's tokens are written as a tsvector *literal* (quoted lexemes) and
query terms as quoted tsquery lexemes, so no PostgreSQL parser, dictionary or stop list ever
sees user text: the `simple` configuration's job (keep tokens as they are) is done exactly,
CJK grams included, and query syntax characters are inert.

Ranking. PostgreSQL's ts_rank and ts_rank_cd know no document frequency, so a query such as
"what did the team decide" would rank documents full of "the" and "what" first. The score is
BM25 with binary term frequency (memory entries are short; a term rarely repeats):

    score(d) = F(|d|) * sum of idf(t) over query terms t in d
    idf(t)   = ln(1 + (N - df_t + 0.5) / (df_t + 0.5))
    F(|d|)   = (k1 + 1) / (1 + k1 * (1 - b + b * |d| / avg|d|))

with |d| the document's distinct lexemes and N, df_t, avg|d| taken over the versions active
at the head (`scopes`, `term_stats`), like SQLite's FTS5 statistics span the whole table.

Scoring every document that shares any common word is what makes full-text search slow at a
million entries, so the search runs MaxScore-style in up to two passes: first over the
documents containing one of the rarest terms (a bounded number of rows), each scored with
all terms; a document without any of those terms scores at most F_max times the other terms'
idf sum, and when the first pass's limit-th score beats that bound its order is final.
Otherwise the second pass matches on every term except the commonest ones whose combined bound
stays below that limit-th score (often "the", "what", ...), scoring with all of them again.
Both passes give exactly the order a full scan would.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from psycopg import sql

from powercontext.memory.filters import MemoryFilter
from powercontext.storage.filter_sql import filter_sql

K1 = 1.2
B = 0.75
F_MAX = (K1 + 1) / (1 + K1 * (1 - B))
"""The largest length factor (a document with no lexemes)."""
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


def idf(df: int, total: int) -> float:
    total = max(total, df)
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


@dataclass(frozen=True, slots=True)
class RankPlan:
    terms: tuple[str, ...]
    """Distinct usable terms, rarest first, at most MAX_SCORED_TERMS."""
    weights: tuple[float, ...]
    first_pass: int
    """How many of the rarest terms the first pass matches on."""
    average_length: float


def plan_ranking(
    terms: Sequence[str],
    frequencies: Mapping[str, int],
    total: int,
    lexeme_total: int,
    fields: Mapping[str, tuple[str, float]] | None = None,
) -> RankPlan | None:
    """`fields` maps a field lexeme (`_word`, `@word`) to its query term and field weight: it
    scores field weight x the term's idf (the idf of entries whose own text holds it)."""
    distinct = clean_terms(terms)
    if not distinct:
        return None
    # Rarest first; ties keep the query's order so the plan is deterministic.
    ranked = sorted(distinct, key=lambda t: frequencies.get(t, 0))[:MAX_SCORED_TERMS]
    fields = fields or {}

    def weight(lexeme: str) -> float:
        base, scale = fields.get(lexeme, (lexeme, 1.0))
        return scale * idf(frequencies.get(base, 0) or frequencies.get(lexeme, 0), total)

    weights = tuple(weight(t) for t in ranked)
    first, budget = 0, 0
    for term in ranked:
        budget += frequencies.get(term, 0)
        if first and budget > FIRST_PASS_DF_BUDGET:
            break
        first += 1
    average = lexeme_total / total if total > 0 and lexeme_total > 0 else 1.0
    return RankPlan(
        terms=tuple(ranked),
        weights=weights,
        first_pass=first,
        average_length=average,
    )


def ranking_query(
    plan: RankPlan,
    match_terms: int,
    scope_id: str,
    revision: int,
    limit: int,
    where: MemoryFilter | None = None,
) -> tuple[sql.Composed, list[object]]:
    """The candidates query and its parameters: it matches versions active at `revision` that
    contain one of the first `match_terms` terms and scores them with all of the plan's."""
    clause, filter_params = filter_sql(where, "postgres")
    cases = sql.SQL(" + ").join(
        sql.SQL("(CASE WHEN tokens @@ %s::tsquery THEN %s::float8 ELSE 0 END)") for _ in plan.terms
    )
    query = sql.SQL(
        "SELECT key, score, tsvector_to_array(tokens) FROM ("
        " SELECT key, tokens, ({cases}) * (%s::float8 / (1 + %s::float8 * (1 - %s::float8"
        " + %s::float8 * length(tokens) / %s::float8))) AS score"
        " FROM entry_versions"
        " WHERE scope_id = %s AND tokens @@ %s::tsquery AND added_revision <= %s"
        " AND (removed_revision IS NULL OR removed_revision > %s){clause}"
        " ORDER BY score DESC, key LIMIT %s"
        ") ranked ORDER BY score DESC, key"
    ).format(cases=cases, clause=sql.SQL(clause))
    params: list[object] = []
    for term, weight in zip(plan.terms, plan.weights, strict=True):
        params.extend((quote_lexeme(term), weight))
    params.extend((K1 + 1, K1, B, B, plan.average_length))
    params.extend((scope_id, term_query(plan.terms[:match_terms]), revision, revision))
    params.extend((*filter_params, limit))
    return query, params


def terms_to_match(plan: RankPlan, scores: Sequence[float], limit: int) -> int:
    """How many of the rarest terms a pass must match on so that no document it skips could
    enter the top `limit`, given the scores a pass over the first `plan.first_pass` found.

    A document containing only the commonest terms scores at most F_MAX times their idf sum;
    those terms can be left out of the match while that bound stays below the limit-th score
    found so far (a real document's exact score, so a lower bound of the final one). When the
    answer is `plan.first_pass`, the first pass was final.
    """
    if len(scores) < limit:
        return len(plan.terms)  # the skipped documents may be needed to fill the limit
    threshold = min(scores)
    margin = 1e-9 * max(1.0, threshold)  # float sums in SQL and here may differ in the last bit
    keep, bound = len(plan.terms), 0.0
    while keep > plan.first_pass:
        widened = bound + F_MAX * plan.weights[keep - 1]
        if widened + margin >= threshold:
            break
        keep, bound = keep - 1, widened
    return keep
