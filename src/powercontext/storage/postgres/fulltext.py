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

The passes that choose which documents to score are in maxscore.py.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from psycopg import sql

from powercontext.memory.filters import MemoryFilter
from powercontext.memory.search import bm25
from powercontext.memory.search.fields import CONTEXT_PREFIX, own_length
from powercontext.storage.filter_sql import filter_sql

if TYPE_CHECKING:
    from powercontext.storage.postgres.maxscore import RankPlan

MAX_LEXEME_BYTES = 2046
REPEAT_MARK = "\x1f"
"""Prefix of the marker lexeme a version's tsvector holds for each lexeme it repeats: the GIN
index then finds the versions where a word occurs more than once apart from the rest, whose
single occurrence bounds their score lower. No token can start with it (see clean)."""


def quote_lexeme(token: str) -> str:
    """A lexeme quoted for tsvector and tsquery input: nothing inside is syntax."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def clean(token: str) -> str:
    # PostgreSQL text cannot hold NUL, and rejects lexemes over 2046 bytes (a marker adds one);
    # the analyzer makes neither (words stop at 64 characters), so only hand-made tokens lose
    # anything here.
    token = token.replace("\x00", "")
    if token.startswith(REPEAT_MARK):
        return ""
    return token if len(token.encode("utf-8")) < MAX_LEXEME_BYTES else ""


def tsvector_literal(index_tokens: str) -> tuple[str, list[str]]:
    """The tsvector input text of space-joined tokens and its distinct lexemes (first-seen
    order). No positions: the ranking needs only membership and the lexeme count."""
    if "\x00" in index_tokens or REPEAT_MARK in index_tokens or len(index_tokens) > 500:
        lexemes = clean_terms(index_tokens.split())  # 500 characters: at most 2000 bytes
    else:
        lexemes = list(dict.fromkeys(index_tokens.split()))
    if not lexemes:
        return "", lexemes
    if "'" in index_tokens or "\\" in index_tokens:
        return " ".join(map(quote_lexeme, lexemes)), lexemes
    return "'" + "' '".join(lexemes) + "'", lexemes


def clean_terms(terms: Iterable[str]) -> list[str]:
    """Distinct usable terms in first-seen order."""
    return [t for t in dict.fromkeys(clean(term) for term in terms) if t]


def term_query(terms: Iterable[str]) -> str:
    """A tsquery matching any of `terms` ('a' | 'b' | ...)."""
    return " | ".join(quote_lexeme(term) for term in terms)


@dataclass(frozen=True, slots=True)
class IndexedText:
    """What one version's index tokens become in its row."""

    literal: str
    lexemes: list[str]
    """Its distinct lexemes, then a REPEAT_MARK lexeme for each that occurs more than once."""
    own_length: int
    context_length: int
    term_counts: str | None
    """JSON of the lexemes that occur more than once and their counts; None when none does."""
    peaks: dict[str, Peak]
    """Each lexeme's count and count per length of its field (see Peak)."""


class Peak(NamedTuple):
    """What bounds a lexeme's part of tf~ in the versions holding it (`term_stats.tf_max`,
    `tf_ratio_max`): its largest count, and its largest count per length of its field (own
    words, or the neighbours' `_` words; infinite for a field length of 0). Both only grow
    while versions are added, so they stay upper bounds when versions retire. A lexeme's own
    peak counts it once in every version (tf 1, the largest 1 / length); its REPEAT_MARK
    lexeme's holds the real counts of the versions where it repeats."""

    tf: int
    ratio: float

    def merge(self, other: Peak) -> Peak:
        return Peak(max(self.tf, other.tf), max(self.ratio, other.ratio))


def indexed_text(index_tokens: str) -> IndexedText:
    literal, lexemes = tsvector_literal(index_tokens)
    tokens = index_tokens.split()
    repeats = {term: n for term, n in Counter(clean_terms_all(tokens)).items() if n > 1}
    own = own_length(tokens)
    context = sum(1 for token in tokens if token.startswith(CONTEXT_PREFIX))
    peaks = {}
    for lexeme in lexemes:
        length = context if lexeme.startswith(CONTEXT_PREFIX) else own
        peaks[lexeme] = Peak(1, 1 / length if length else math.inf)
    marks = [REPEAT_MARK + lexeme for lexeme in repeats]
    for lexeme, tf in repeats.items():
        length = context if lexeme.startswith(CONTEXT_PREFIX) else own
        peaks[REPEAT_MARK + lexeme] = Peak(tf, tf / length if length else math.inf)
    if marks:
        literal = " ".join((literal, *map(quote_lexeme, marks)))
    return IndexedText(
        literal=literal,
        lexemes=lexemes + marks,
        own_length=own,
        context_length=context,
        term_counts=json.dumps(repeats, ensure_ascii=False) if repeats else None,
        peaks=peaks,
    )


def clean_terms_all(tokens: Iterable[str]) -> list[str]:
    """Every usable token, repeats kept."""
    return [t for t in map(clean, tokens) if t]


_NORMS = {"own": sql.SQL("n_own"), "context": sql.SQL("n_context")}


def _tilde(plan: RankPlan, term: str, params: list[object]) -> sql.Composable:
    """tf~ of one term (bm25.weighted_tf summed over the fields), in SQL."""
    parts: list[sql.Composable] = []
    for field in plan.fields:
        lexeme = field.prefix + term
        if lexeme in plan.absent:
            continue
        params.extend((quote_lexeme(lexeme), lexeme, field.weight))
        part = sql.SQL(
            "(CASE WHEN tokens @@ %s::tsquery"
            " THEN coalesce((term_counts ->> %s)::float8, 1) ELSE 0 END * %s::float8)"
        )
        norm = None if field.norm is None else _NORMS[field.norm]
        parts.append(part if norm is None else sql.SQL("{} / {}").format(part, norm))
    return sql.SQL("(") + sql.SQL(" + ").join(parts) + sql.SQL(")")


def ranking_query(
    plan: RankPlan,
    match: int | Sequence[str],
    scope_id: str,
    revision: int,
    limit: int,
    where: MemoryFilter | None = None,
) -> tuple[sql.Composed, list[object]]:
    """The candidates query and its parameters: it matches versions active at `revision` that
    contain one of the first `match` terms (in any field), or that match one of the tsqueries
    `match` (see match_query), and scores them with all of the plan's terms. OFFSET 0 keeps each tf~
    computed once, not once per use."""
    clause, filter_params = filter_sql(where, "postgres")
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
    query = sql.SQL(
        "SELECT key, score, tsvector_to_array(tokens) FROM ("
        " SELECT key, tokens, ({saturated}) AS score FROM ("
        "  SELECT key, tokens, {tildes} FROM ("
        "   SELECT key, tokens, term_counts,"
        "   %s::float8 - %s::float8 + %s::float8 * own_length / %s::float8 AS n_own,"
        "   %s::float8 - %s::float8 + %s::float8 * context_length / %s::float8 AS n_context"
        "   FROM entry_versions"
        "   WHERE scope_id = %s AND ({matches}) AND added_revision <= %s"
        "   AND (removed_revision IS NULL OR removed_revision > %s){clause} OFFSET 0"
        "  ) normed OFFSET 0"
        " ) tilded ORDER BY score DESC, key LIMIT %s"
        ") ranked ORDER BY score DESC, key"
    ).format(
        saturated=saturated,
        tildes=tildes,
        clause=sql.SQL(clause),
        matches=sql.SQL(" OR ").join(
            sql.SQL("tokens @@ %s::tsquery")
            for _ in (range(1) if isinstance(match, int) else match)
        ),
    )
    params.extend((1.0, bm25.B, bm25.B, plan.own_average))
    params.extend((1.0, bm25.B, bm25.B, plan.context_average))
    tsqueries = [term_query(plan.lexemes(match))] if isinstance(match, int) else list(match)
    params.extend((scope_id, *tsqueries, revision, revision))
    params.extend((*filter_params, limit))
    return query, params
