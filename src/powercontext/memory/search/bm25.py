"""The full-text channel's score: BM25F over the index fields (search.fields), one formula
for every backend. SQLite evaluates it over numpy postings, PostgreSQL in SQL with these same
constants and functions; `tests/contract/test_bm25_parity_contract.py` holds them equal.

For a query term t and an entry d:

    tf~(t, d)  = tf_own / B_own + w_context * tf_context / B_context + w_speaker * tf_speaker
    B_f        = 1 - b + b * |d|_f / avg |d|_f      (own words; neighbours' `_` words)
    score(d)   = sum over distinct query terms of idf(t) * tf~ (k1 + 1) / (tf~ + k1)
    idf(t)     = ln(1 + (N - df + 0.5) / (df + 0.5))

df counts entries whose own text holds t (a neighbour repeating a word does not make it
commoner); only a term no entry holds in its own text takes the neighbour field's df, else the
speaker field's. The speaker field is a name or two and is not length-normalized.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from powercontext.memory.search.fields import CONTEXT_PREFIX, SPEAKER_PREFIX, FieldWeights

K1 = 1.2
B = 0.75
MAX_SATURATION = K1 + 1.0
"""tf~ (k1 + 1) / (tf~ + k1) stays below this however often a term repeats: a term adds at most
MAX_SATURATION x its idf, the bound a top-k search may skip documents by."""

Floats = npt.NDArray[np.floating[Any]]


def idf(df: int, total: int) -> float:
    total = max(total, df)
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def term_df(field_dfs: Sequence[int]) -> int:
    """The df a query term's idf uses, from its df in each of `scored_fields`, in order."""
    return next((df for df in field_dfs if df), 0)


def average_length(total: float, count: int) -> float:
    return total / count if count and total > 0 else 1.0


def length_norm(lengths: Floats, average: float) -> Floats:
    """B_f of each entry from its field length."""
    norm: Floats = 1.0 - B + B * lengths / average
    return norm


@dataclass(frozen=True, slots=True)
class Field:
    prefix: str
    """What the index puts before a term in this field (search.fields)."""
    weight: float
    norm: Literal["own", "context"] | None
    """Which length normalizes the field's term frequency; None: not normalized."""


def scored_fields(weights: FieldWeights) -> tuple[Field, ...]:
    """The fields a query term is scored in, own words first; a field weighted 0 is left out."""
    fields = [Field("", 1.0, "own")]
    if weights.context > 0:
        fields.append(Field(CONTEXT_PREFIX, weights.context, "context"))
    if weights.speaker > 0:
        fields.append(Field(SPEAKER_PREFIX, weights.speaker, None))
    return tuple(fields)


def weighted_tf(tf: Floats, field: Field, norm: Floats | None) -> Floats:
    """One field's part of tf~; tf~ is the sum of these over `scored_fields`."""
    part: Floats = tf * field.weight
    return part if norm is None else part / norm


def saturated(term_idf: float, tilde: Floats) -> Floats:
    """A term's contribution to each entry's score."""
    weight: Floats = term_idf * tilde * (K1 + 1.0) / (tilde + K1)
    return weight
