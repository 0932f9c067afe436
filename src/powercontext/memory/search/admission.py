"""Stage 3: candidate admission. Rejected candidates leave a gap; nothing is back-filled."""

from __future__ import annotations

import math
from collections.abc import Sequence

from powercontext.memory.ports import FtsCandidate, VectorCandidate
from powercontext.memory.search.fields import matched_terms

DEFAULT_MIN_SIMILARITY = 0.3


def required_fts_terms(term_count: int) -> int:
    """1 distinct term for queries of at most 2 terms, else max(2, ceil(terms / 4))."""
    if term_count <= 2:
        return 1
    return max(2, math.ceil(0.25 * term_count))


def admit_fts(candidates: Sequence[FtsCandidate], terms: Sequence[str]) -> list[int]:
    distinct = frozenset(terms)
    need = required_fts_terms(len(distinct))
    return [c.key for c in candidates if matched_terms(distinct, c.tokens) >= need]


def admit_vector(
    candidates: Sequence[VectorCandidate], min_similarity: float = DEFAULT_MIN_SIMILARITY
) -> list[int]:
    return [c.key for c in candidates if c.similarity >= min_similarity]
