"""The full-text channel's text: tsvector literals, safe tsqueries and the term statistics.

The analyzer's tokens are written as a tsvector *literal* (quoted lexemes) and
query terms as quoted tsquery lexemes, so no PostgreSQL parser, dictionary or stop list ever
sees user text: the `simple` configuration's job (keep tokens as they are) is done exactly,
CJK grams included, and query syntax characters are inert.

The IDF-weighted ranking, and the passes that choose which documents it scores, are in
maxscore.py.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from powercontext.memory.search.fields import CONTEXT_PREFIX, own_length

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
