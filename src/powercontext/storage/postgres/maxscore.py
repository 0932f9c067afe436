"""The full-text channel's ranking, and which documents it scores: a MaxScore plan.

Ranking. PostgreSQL's ts_rank and ts_rank_cd know no document frequency, so a query such as
"what did the team decide" would rank documents full of "the" and "what" first. The score is
search.bm25's BM25F, the SQLite channel's formula, written in SQL: each version stores its own
and context lengths (`own_length`, `context_length`) and the counts of its tokens that repeat
(`term_counts`, null when none does; a lexeme in `tokens` but not there occurs once). N, df_t
and the average lengths are taken over the versions active at the head (`scopes`,
`term_stats`).

Scoring every document that shares any common word is what makes full-text search slow at a
million entries, so the search runs MaxScore-style (store.fts_candidates): the first pass
matches the documents containing one of the rarest terms (a bounded number of rows) and scores
each with all terms. Any other document scores at most the sum of the other terms' bounds; a
term's bound is what it can add to any score, from the peaks `term_stats` keeps of its lexemes
(the largest count, and count per field length, over the versions holding it: Peak), or
bm25.MAX_SATURATION x idf where they are unknown. Each version's tsvector also holds a marker
lexeme (REPEAT_MARK + lexeme) for each lexeme it repeats, so a word that occurs once is bounded
by tf 1 and the versions where it repeats are found apart. Later passes match only the
documents whose terms' bounds reach a threshold, as minimal AND groups the GIN index intersects
(match_query), lowering the threshold until the limit-th score found reaches it. Every pass
scores exactly, and a document no pass matched scores below the limit-th score found, so the
order is exactly a full scan's over the documents the plan's matched terms find (all terms
unless FtsQuery.common_term_entries leaves the common ones to add to scores only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from psycopg import sql

from powercontext.memory.filters import MemoryFilter
from powercontext.memory.search import bm25
from powercontext.memory.search.fields import FieldWeights
from powercontext.storage.filter_sql import filter_sql
from powercontext.storage.postgres.fulltext import (
    REPEAT_MARK,
    Peak,
    clean,
    clean_terms,
    quote_lexeme,
    term_query,
)

MAX_SCORED_TERMS = 64
"""Queries longer than this are matched and scored by their rarest 64 distinct terms."""
FIRST_PASS_DF_BUDGET = 4096
"""The first pass takes the rarest terms while their document frequencies sum to at most this."""


@dataclass(frozen=True, slots=True)
class RankPlan:
    terms: tuple[str, ...]
    """Distinct usable query terms, rarest first, at most MAX_SCORED_TERMS."""
    weights: tuple[float, ...]
    """Each term's idf."""
    fields: tuple[bm25.Field, ...]
    first_pass: int
    """How many of the rarest terms the first pass matches on."""
    matched: int
    """How many of the rarest terms find versions: the others (common ones) only add to the
    scores of versions that hold one of these."""
    own_average: float
    context_average: float
    bounds: tuple[float, ...] = ()
    """Each term's largest possible contribution to a score: bm25.MAX_SATURATION x idf, or
    less from the stored peaks of its lexemes (see term_bound)."""
    single_bounds: tuple[float, ...] = ()
    """...in a version where none of its lexemes repeats (lower: tf 1 in every field)."""
    marks: tuple[tuple[str, ...], ...] = ()
    """Each term's REPEAT_MARK lexemes that versions hold: they find where it repeats."""
    absent: frozenset[str] = frozenset()
    """Field lexemes no version holds (df 0 at the head the plan was made for): neither
    matched nor scored."""

    def term_lexemes(self, index: int) -> list[str]:
        """The indexed lexemes of a term that versions may hold, one per scored field."""
        term = self.terms[index]
        return [f.prefix + term for f in self.fields if f.prefix + term not in self.absent]

    def lexemes(self, terms: int) -> list[str]:
        """The indexed lexemes (every scored field) of the first `terms` terms."""
        return [
            lexeme for i in range(min(terms, len(self.terms))) for lexeme in self.term_lexemes(i)
        ]

    def bound(self, index: int) -> float:
        return self.bounds[index] if self.bounds else bm25.MAX_SATURATION * self.weights[index]

    def single_bound(self, index: int) -> float:
        return self.single_bounds[index] if self.single_bounds else self.bound(index)

    def term_marks(self, index: int) -> tuple[str, ...]:
        return self.marks[index] if self.marks else ()


def plan_ranking(
    terms: Sequence[str],
    frequencies: Mapping[str, int],
    total: int,
    own_total: int,
    context_total: int,
    fields: FieldWeights | None = None,
    peaks: Mapping[str, Peak | None] | None = None,
    common_entries: int | None = None,
) -> RankPlan | None:
    """`frequencies` holds the df of each field lexeme (`word`, `_word`, `@word`). `peaks`,
    given when the statistics describe exactly the versions searched (a search at the head),
    holds the stored Peak of each lexeme with df > 0 (None where unknown): lexemes with df 0
    are then left out, and term bounds are taken from the peaks."""
    scored = bm25.scored_fields(fields or FieldWeights())
    distinct = [t for t in clean_terms(terms) if all(clean(f.prefix + t) for f in scored)]
    absent: frozenset[str] = frozenset()
    if peaks is not None:
        absent = frozenset(
            f.prefix + t for t in distinct for f in scored if not frequencies.get(f.prefix + t)
        )
        distinct = [t for t in distinct if any(f.prefix + t not in absent for f in scored)]
    if not distinct:
        return None

    def field_dfs(term: str) -> list[int]:
        return [frequencies.get(field.prefix + term, 0) for field in scored]

    dfs = {term: bm25.term_df(field_dfs(term)) for term in distinct}
    # Rarest first; ties keep the query's order so the plan is deterministic.
    ranked = sorted(distinct, key=lambda t: dfs[t])[:MAX_SCORED_TERMS]
    matched = len(ranked)
    if common_entries is not None:  # the rarest term always finds versions
        matched = max(1, sum(1 for t in ranked if dfs[t] <= common_entries))
    first, budget = 0, 0
    for term in ranked[:matched]:
        budget += sum(field_dfs(term))
        if first and budget > FIRST_PASS_DF_BUDGET:
            break
        first += 1
    weights = tuple(bm25.idf(dfs[t], total) for t in ranked)
    own_average = bm25.average_length(own_total, total)
    context_average = bm25.average_length(context_total, total)
    averages = {"own": own_average, "context": context_average}
    bounds: list[float] = []
    singles: list[float] = []
    marks: list[tuple[str, ...]] = []
    for term, weight in zip(ranked, weights, strict=True):
        ceiling = bm25.MAX_SATURATION * weight
        held = [(f, f.prefix + term) for f in scored if f.prefix + term not in absent]
        once = [peaks.get(lexeme) for _, lexeme in held] if peaks is not None else [None]
        if peaks is None or any(peak is None for peak in once):  # unknown: loose, no marks
            bounds.append(ceiling)
            singles.append(ceiling)
            marks.append(())
            continue
        parts: list[tuple[bm25.Field, Peak]] = []
        marked: list[str] = []
        for (field, lexeme), peak in zip(held, once, strict=True):
            assert peak is not None
            parts.append((field, peak))
            if frequencies.get(REPEAT_MARK + lexeme):
                marked.append(REPEAT_MARK + lexeme)
        single = term_bound(weight, parts, averages)
        repeated = [peaks.get(mark) for mark in marked]
        if any(peak is None for peak in repeated):
            bounds.append(ceiling)
        else:
            peak_of = dict(zip(marked, repeated, strict=True))
            widest = [
                (field, peak.merge(peak_of.get(REPEAT_MARK + field.prefix + term) or peak))
                for field, peak in parts
            ]
            bounds.append(term_bound(weight, widest, averages))
        singles.append(single)
        marks.append(tuple(marked))
    return RankPlan(
        terms=tuple(ranked),
        weights=weights,
        fields=scored,
        first_pass=first,
        matched=matched,
        own_average=own_average,
        context_average=context_average,
        bounds=tuple(bounds),
        single_bounds=tuple(singles),
        marks=tuple(marks),
        absent=absent,
    )


def term_bound(
    weight: float, parts: Sequence[tuple[bm25.Field, Peak]], averages: Mapping[str, float]
) -> float:
    """The most a term of idf `weight` adds to any score, given the peaks of its lexemes.

    A field's part of tf~ is w tf / (1 - b + b L / avg): its inverse, (1 - b) / tf +
    b (L / tf) / avg, is at least (1 - b) / tf_max + b / (avg ratio_max), which gives the
    bound of each field's part; tf~ is at most their sum, and the saturation grows with tf~.
    """
    tilde = 0.0
    for field, peak in parts:
        if field.norm is None:
            tilde += field.weight * peak.tf
            continue
        inverse = (1.0 - bm25.B) / peak.tf + bm25.B / (averages[field.norm] * peak.ratio)
        tilde += field.weight / inverse
    ceiling = bm25.MAX_SATURATION * weight
    return min(ceiling, weight * (bm25.K1 + 1.0) * tilde / (tilde + bm25.K1))


MAX_PASSES = 6
"""Passes after the first one before the last, which matches every term when fewer than the
limit were found."""
GUESS_STEP = 0.5
"""While fewer than the limit were found, each pass lowers the score it matches down to by
this factor (see store.fts_candidates)."""
MAX_CONJUNCTIONS = 32
"""How many AND groups a pass may match on (each one GIN scan); past it, the groups are
widened (a superset, so the pass stays exact, only less selective)."""


def margin(threshold: float) -> float:
    return 1e-9 * max(1.0, threshold)  # float sums in SQL and here may differ in the last bit


def rest_bound(plan: RankPlan) -> float:
    """The most a document holding none of the first pass's terms can score."""
    return sum(plan.bound(i) for i in range(plan.first_pass, len(plan.terms)))


def match_query(plan: RankPlan, threshold: float) -> list[str]:
    """tsqueries that together match every document whose terms after the first pass's have
    bounds summing to at least `threshold`: with the first pass's documents, every document
    that can score `threshold` or more (one matching none scores below it, however its terms
    repeat).

    Each is a conjunction: a minimal set of terms whose bounds reach the threshold, a term
    counting its single bound where it occurs once (any of its field lexemes) and its full
    bound where it repeats (any of its marks). A threshold no higher than every single bound
    gives one conjunction per term (a plain OR); a higher one asks for terms together, which
    the GIN index intersects instead of reading every posting of a common term whole. Past
    MAX_CONJUNCTIONS, every term's marks count as the term itself, then only the commonest
    terms whose bounds together stay below the threshold are left out of a plain OR.
    """
    order = sorted(range(plan.first_pass, plan.matched), key=lambda i: (-plan.bound(i), i))
    # A common term may add its bound to any version matched through a rarer one.
    common = sum(plan.bound(i) for i in range(plan.matched, len(plan.terms)))
    need = threshold - margin(threshold) - common
    found = _conjunctions(plan, order, need, marks=True) if need > 0 else None
    if found is None and need > 0:
        found = _conjunctions(plan, order, need, marks=False)
    if found is None or not found:
        keep, rest = plan.matched, 0.0
        while keep > plan.first_pass + 1 and rest + plan.bound(keep - 1) < need:
            keep, rest = keep - 1, rest + plan.bound(keep - 1)
        return [term_query(plan.lexemes(keep)[len(plan.lexemes(plan.first_pass)) :])]
    # One GIN scan per rarest term: the conjunctions it leads share its postings, read once.
    led: dict[tuple[int, bool], list[Conjunction]] = {}
    for conjunction in found:
        lead = min(conjunction)
        led.setdefault(lead, []).append(conjunction - {lead})
    queries = []
    for lead, rests in led.items():
        if any(not rest for rest in rests):
            queries.append(_group(plan, lead))
        else:
            alternatives = " | ".join(_tsquery(plan, rest) for rest in rests)
            queries.append(f"{_group(plan, lead)} & ({alternatives})")
    return queries


Conjunction = frozenset[tuple[int, bool]]
"""(term index, whether only its marks match) of each term a conjunction requires."""


def _group(plan: RankPlan, item: tuple[int, bool]) -> str:
    index, repeated = item
    lexemes = plan.term_marks(index) if repeated else plan.term_lexemes(index)
    return "(" + term_query(lexemes) + ")"


def _tsquery(plan: RankPlan, conjunction: Conjunction) -> str:
    return " & ".join(_group(plan, item) for item in sorted(conjunction))


def _conjunctions(
    plan: RankPlan, order: list[int], need: float, *, marks: bool
) -> list[Conjunction] | None:
    """The minimal conjunctions (None past MAX_CONJUNCTIONS candidates)."""
    bounds = [plan.bound(i) for i in order]
    singles = [plan.single_bound(i) if marks else plan.bound(i) for i in order]
    suffix = [0.0] * (len(order) + 1)
    for j in range(len(order) - 1, -1, -1):
        suffix[j] = suffix[j + 1] + bounds[j]
    made: list[Conjunction] = []

    def walk(j: int, need: float, chosen: tuple[tuple[int, bool], ...]) -> bool:
        if need <= 0:
            made.append(frozenset(chosen))
            return len(made) <= 4 * MAX_CONJUNCTIONS
        if j == len(order) or suffix[j] < need:
            return True
        index = order[j]
        if not walk(j + 1, need - singles[j], (*chosen, (index, False))):
            return False
        repeats = singles[j] < bounds[j] and plan.term_marks(index)
        if repeats and not walk(j + 1, need - bounds[j], (*chosen, (index, True))):
            return False
        return walk(j + 1, need, chosen)

    if not walk(0, need, ()):
        return None

    # Keep the minimal ones: a conjunction requiring all another requires (a term's marks
    # requiring at least its lexemes) matches a subset of what that one does.
    def covers(wider: Conjunction, narrower: Conjunction) -> bool:
        return all(
            (index, False) in narrower or (index, True) in narrower
            if not repeated
            else (index, True) in narrower
            for index, repeated in wider
        )

    minimal = [c for c in made if not any(o != c and covers(o, c) for o in made)]
    minimal = list(dict.fromkeys(minimal))
    return minimal if len(minimal) <= MAX_CONJUNCTIONS else None


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
