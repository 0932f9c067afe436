"""Fields of the full-text index: an entry's own words, its neighbours' words, its speaker.

The analyzer's tokens carry their field as a prefix the analyzer itself never produces
(it emits only letters and digits): `word` is the entry's own text, `_word` a neighbour's
(contextual indexing), `@word` the entry's speaker (the metadata key the index names,
`speaker` by default). The channel scores a query term over the three fields BM25F-style:
a neighbour's word counts less than the entry's own (weight `context`), and a query that
names the entry's speaker favours it (weight `speaker`). Admission counts a query term as
matched in any field.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

CONTEXT_PREFIX = "_"
SPEAKER_PREFIX = "@"
PREFIXES = (CONTEXT_PREFIX, SPEAKER_PREFIX)


@dataclass(frozen=True, slots=True)
class FieldWeights:
    context: float = 0.5
    """A neighbour's word against the entry's own (1.0): the entry's own words say what it is
    about; its neighbours only say where it sits."""
    speaker: float = 0.5
    """A query term naming the entry's speaker."""


def context_tokens(tokens: Iterable[str]) -> list[str]:
    return [CONTEXT_PREFIX + token for token in tokens]


def speaker_tokens(tokens: Iterable[str]) -> list[str]:
    return [SPEAKER_PREFIX + token for token in tokens]


def own_length(tokens: Iterable[str]) -> int:
    return sum(1 for token in tokens if not token.startswith(PREFIXES))


def term_fields(terms: Iterable[str]) -> frozenset[str]:
    """Every field's token of each term: an entry matches some term iff it holds one."""
    return frozenset(
        token for term in terms for token in (term, CONTEXT_PREFIX + term, SPEAKER_PREFIX + term)
    )


def matched_terms(terms: frozenset[str], tokens: frozenset[str]) -> int:
    """How many distinct query terms the entry matches, in any field."""
    return sum(
        1
        for term in terms
        if term in tokens or CONTEXT_PREFIX + term in tokens or SPEAKER_PREFIX + term in tokens
    )
