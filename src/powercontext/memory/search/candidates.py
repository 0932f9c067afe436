"""Query-time candidate policy: how large a coarse pool the reranker sees, per query class.

`powercontext.memory.candidates.by_class.v2` classifies the query by surface rules and maps
each class to its own candidate limit (a settings table). A question after one date needs a
smaller pool than one asking for everything someone did; a fixed Top-30 pays for the widest
question on every search.

v2 keeps v1's rules and changes the default table. v1's (one_fact 20, time 20, comparison 30,
count 50, list 50) sat 0.001 below the fixed-limit curve on LoCoMo once issue 17's search made
the Top-20 pool much better. v2's table was chosen by `powercontext.bench.locomo.class_fit` on
two LoCoMo conversations (conv-26, conv-30) out of the grid 10..50 and judged on the two others
(docs/locomo.md), with issue 17's search defaults: time questions take 10 candidates, every
other class 20. The margin it buys over the fixed-limit curve is small (docs/locomo.md gives
it, held out).

The rules read the casefolded, unstemmed words of the query (the analyzer's tokenizer, so
any script it splits works). One rule holds in every language: two or more question marks
make a `list` (several facts asked at once). The cue words are per analyzer language:
English (`english`, `porter`, `none`/unset), German, French and Spanish. For any other
language only the question-mark rule applies and every other query is `one_fact`.
The cues are generic question forms (how many, when, compare, list...), never words taken
from an evaluation set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal, get_args

from powercontext.memory.search.analyze import AnalyzerConfig, surface_words

BY_CLASS_POLICY_ID = "powercontext.memory.candidates.by_class.v2"
FIXED_POLICY_ID = "powercontext.memory.candidates.fixed.v1"

QueryClass = Literal["one_fact", "list", "count", "time", "comparison"]
QUERY_CLASSES: tuple[QueryClass, ...] = get_args(QueryClass)

# Fitted (bench: class_fit on conv-26, conv-30): one_fact and time. Too rare there to fit on
# (list 9, count 4, comparison 1): they follow one_fact, as class_fit does below 10.
# Refitted once issue 17's pseudo-relevance feedback became a default: it moves evidence up
# the pool, so fewer candidates reach the same recall (docs/locomo.md).
DEFAULT_CLASS_LIMITS: dict[str, int] = {
    "one_fact": 20,
    "time": 10,
    "comparison": 20,
    "count": 20,
    "list": 20,
}


@dataclass(frozen=True, slots=True)
class _Cues:
    """Single words and adjacent word pairs that mark a class, in one language."""

    count: frozenset[str]
    time: frozenset[str]
    comparison: frozenset[str]
    listing: frozenset[str]


def _cues(count: str, time: str, comparison: str, listing: str) -> _Cues:
    parsed = (
        frozenset(c.strip() for c in cue.split(",")) for cue in (count, time, comparison, listing)
    )
    return _Cues(*parsed)


_ENGLISH = _cues(
    "how many, how much, how often, number of, count",
    "when, what year, what date, what month, what day, what time, which year, which month,"
    " which day, how long, since when, until when, date",
    "compare, compared, comparison, versus, vs, difference, differ, than, better, worse,"
    " more or, or less",
    "list, all, every, everything, kinds, types, ways, things, items, examples, several,"
    " various, what are, what were, which are, which were",
)
_GERMAN = _cues(
    "wie viele, wie viel, wie oft, anzahl",
    "wann, welches jahr, welchem jahr, welches datum, wie lange, seit wann, bis wann",
    "vergleich, vergleiche, versus, unterschied, besser, schlechter",
    "liste, alle, alles, jede, arten, dinge, beispiele, mehrere, verschiedene",
)
_FRENCH = _cues(
    "combien, nombre de, combien de",
    "quand, quelle année, quelle date, quel jour, quel mois, depuis quand, jusqu à",
    "comparer, comparé, versus, différence, mieux, pire, plus ou",
    "liste, tous, toutes, tout, chaque, types, choses, exemples, plusieurs, divers",
)
_SPANISH = _cues(
    "cuántos, cuántas, cuánto, cuánta, número de, cuántas veces",
    "cuándo, qué año, qué fecha, qué día, qué mes, desde cuándo, hasta cuándo",
    "comparar, comparado, versus, diferencia, mejor, peor",
    "lista, todos, todas, todo, cada, tipos, cosas, ejemplos, varios, varias",
)
_BY_LANGUAGE: dict[str | None, _Cues] = {
    None: _ENGLISH,
    "none": _ENGLISH,
    "english": _ENGLISH,
    "porter": _ENGLISH,
    "german": _GERMAN,
    "french": _FRENCH,
    "spanish": _SPANISH,
}


def classify_query(query: str, analyzer: AnalyzerConfig | None = None) -> QueryClass:
    """The class of `query`; the first matching rule wins: count, time, comparison, list."""
    analyzer = analyzer or AnalyzerConfig()
    words = surface_words(query, analyzer)
    grams = set(words) | {f"{a} {b}" for a, b in pairwise(words)}
    cues = _BY_LANGUAGE.get(analyzer.language)
    if cues is not None:
        if grams & cues.count:
            return "count"
        if grams & cues.time:
            return "time"
        if grams & cues.comparison:
            return "comparison"
        if grams & cues.listing:
            return "list"
    if query.count("?") + query.count("\uff1f") >= 2:
        return "list"
    return "one_fact"


@dataclass(frozen=True, slots=True)
class CandidateChoice:
    """What the candidate policy chose for one search; recorded in the rerank trace."""

    policy_id: str
    candidate_limit: int
    query_class: QueryClass | None = None


@dataclass(frozen=True, slots=True)
class CandidatePolicy:
    """`fixed` keeps the configured candidate limit for every query (the RFC's default);
    `by_class` maps the query's class to its limit in `class_limits` (defaults where unset)."""

    name: Literal["fixed", "by_class"] = "fixed"
    class_limits: Mapping[str, int] | None = None

    def choose(self, query: str, analyzer: AnalyzerConfig, fixed_limit: int) -> CandidateChoice:
        if self.name == "fixed":
            return CandidateChoice(FIXED_POLICY_ID, fixed_limit)
        query_class = classify_query(query, analyzer)
        limits = {**DEFAULT_CLASS_LIMITS, **(self.class_limits or {})}
        return CandidateChoice(BY_CLASS_POLICY_ID, limits[query_class], query_class)


def validate_class_limits(limits: Mapping[str, int]) -> dict[str, int]:
    """Known classes only, each limit 1..100 (the candidate limit's own bounds)."""
    unknown = sorted(set(limits) - set(QUERY_CLASSES))
    if unknown:
        raise ValueError(f"unknown query classes {unknown}; known: {list(QUERY_CLASSES)}")
    bad = {k: v for k, v in limits.items() if not 1 <= v <= 100}
    if bad:
        raise ValueError(f"candidate limits must be 1..100, got {bad}")
    return {**DEFAULT_CLASS_LIMITS, **limits}
