"""Stage 3: candidate admission. Rejected candidates leave a gap; nothing is back-filled."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from powercontext.memory.ports import FtsCandidate, VectorCandidate
from powercontext.memory.search.fields import matched_terms, term_fields
from powercontext.memory.values import Channel

DEFAULT_MIN_SIMILARITY = 0.3


def required_fts_terms(term_count: int) -> int:
    """1 distinct term for queries of at most 2 terms, else max(2, ceil(terms / 4))."""
    if term_count <= 2:
        return 1
    return max(2, math.ceil(0.25 * term_count))


@dataclass(frozen=True, slots=True)
class Admission:
    fts_found: list[FtsCandidate]
    """The full-text candidates above the request's `min_score` floor, in channel order: later
    stages (explain, participants) see only these."""
    vector_found: list[VectorCandidate]
    keys: dict[Channel, list[int]]
    """The admitted keys of each channel, in channel order."""


def admit(
    fts_found: Sequence[FtsCandidate],
    vector_found: Sequence[VectorCandidate],
    terms: Sequence[str],
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    min_score: float | None = None,
) -> Admission:
    """Full text: at least `required_fts_terms` distinct query terms matched (any field) and
    a BM25 score >= `min_score` when one is set; vector: cosine >= `min_similarity` (NaN never
    passes)."""
    floored = [c for c in fts_found if min_score is None or c.score >= min_score]
    distinct = frozenset(terms)
    need = required_fts_terms(len(distinct))
    if need == 1:
        # One term in any field: one set test per candidate (most queries are this short).
        spelled = term_fields(distinct)
        fts_keys = [c.key for c in floored if not spelled.isdisjoint(c.tokens)]
    else:
        fts_keys = [c.key for c in floored if matched_terms(distinct, c.tokens) >= need]
    return Admission(
        fts_found=floored,
        vector_found=list(vector_found),
        keys={
            "fts": fts_keys,
            "vector": [c.key for c in vector_found if c.similarity >= min_similarity],
        },
    )
