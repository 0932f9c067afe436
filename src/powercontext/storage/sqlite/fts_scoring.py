"""Scoring a query over one scope's cached postings (storage.sqlite.fulltext keeps them current).

BM25F per memory/search/bm25.py: each query term's contribution to the rows holding it is
computed once and kept until the rows change; a query adds those up, masks the rows not
active at its revision, and keeps the best. Rare terms score only their rows (sparse); common
ones take one vectorized pass over every row (dense); both give the same floats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from powercontext.memory.ports import FtsCandidate
from powercontext.memory.search import bm25
from powercontext.memory.search.fields import FieldWeights
from powercontext.storage.sqlite.postings import Postings

_TOKEN_SETS = 16_384
"""Token sets kept per scope (a few MB: a set of ~20 shared strings is about 1 KB)."""
_SPARSE_SHARE = 8
"""A search whose terms' postings hold fewer than 1/8 of the scope's rows scores those rows
only; above that one vectorized pass over every row is cheaper."""


_Weights = list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]]
"""Each term's rows and its BM25F contribution to each (ScopeScoring._term_weights)."""
_Keys = npt.NDArray[np.int64] | None
"""The keys a search may return (a filter's, or the rows a rarer term finds); None: any."""


class ScopeScoring:
    """The query side of `fulltext.ScopeTerms`, which fills and refreshes these attributes."""

    size: int
    keys: npt.NDArray[np.int64]
    added: npt.NDArray[np.int64]
    removed: npt.NDArray[np.int64]
    own_lengths: npt.NDArray[np.float32]
    own_total: float
    context_lengths: npt.NDArray[np.float32]
    context_total: float
    terms: dict[str, Postings]
    names: list[str]
    row_tokens: npt.NDArray[np.int32]
    token_end: npt.NDArray[np.int64]
    rewritten: dict[int, npt.NDArray[np.int32]]
    _token_sets: dict[int, frozenset[str]]
    _inactive: tuple[int, npt.NDArray[np.int64]] | None
    _norms: dict[str, npt.NDArray[np.float64]]
    _weights: dict[tuple[str, FieldWeights], tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]]

    def tokens(self, row: int) -> frozenset[str]:
        # map over a list, not a generator: every candidate of every search passes here.
        name = self.names.__getitem__
        rewritten = self.rewritten.get(row)
        if rewritten is not None:
            return frozenset(map(name, rewritten.tolist()))
        found = self._token_sets.get(row)
        if found is None:
            first = int(self.token_end[row - 1]) if row else 0
            found = frozenset(map(name, self.row_tokens[first : int(self.token_end[row])].tolist()))
            if len(self._token_sets) >= _TOKEN_SETS:
                self._token_sets.clear()
            self._token_sets[row] = found
        return found

    def _inactive_rows(self, revision: int) -> npt.NDArray[np.int64]:
        """Rows not active at `revision`; usually none when searching the head."""
        if self._inactive is None or self._inactive[0] != revision:
            n = self.size
            active = (self.added[:n] <= revision) & (self.removed[:n] > revision)
            self._inactive = (revision, np.flatnonzero(~active))
        return self._inactive[1]

    def _norm(self, field: str) -> npt.NDArray[np.float64]:
        """B_f of every row, computed once per change of the rows (like the term weights)."""
        norm = self._norms.get(field)
        if norm is None:
            lengths, total = (
                (self.own_lengths, self.own_total)
                if field == "own"
                else (self.context_lengths, self.context_total)
            )
            average = bm25.average_length(total, self.size)
            norm = bm25.length_norm(lengths[: self.size].astype(np.float64), average).astype(
                np.float64, copy=False
            )
            self._norms[field] = norm
        return norm

    def _term_weights(
        self, term: str, fields: FieldWeights
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]] | None:
        """BM25F contribution of `term` to each row holding it in any field (search.bm25),
        cached until rows change."""
        cached = self._weights.get((term, fields))
        if cached is not None:
            return cached
        scored = bm25.scored_fields(fields)
        found = [(field, self.terms.get(field.prefix + term)) for field in scored]
        parts = [(field, postings) for field, postings in found if postings is not None]
        if not parts:
            return None
        term_idf = bm25.idf(bm25.term_df([p.size if p else 0 for _, p in found]), self.size)
        rows_parts: list[npt.NDArray[np.int32]] = []
        tf_parts: list[npt.NDArray[np.float64]] = []
        for field, postings in parts:
            field_rows = postings.rows[: postings.size]
            norm = None if field.norm is None else self._norm(field.norm)[field_rows]
            tfs = bm25.weighted_tf(postings.tfs[: postings.size], field, norm)
            rows_parts.append(field_rows)
            tf_parts.append(tfs.astype(np.float64, copy=False))
        rows: npt.NDArray[np.int32]
        if len(parts) == 1:
            rows, tilde = rows_parts[0], tf_parts[0]
        else:
            unique, inverse = np.unique(np.concatenate(rows_parts), return_inverse=True)
            rows = unique.astype(np.int32)
            tilde = np.bincount(inverse, weights=np.concatenate(tf_parts)).astype(
                np.float64, copy=False
            )
        weights = bm25.saturated(term_idf, tilde).astype(np.float64, copy=False)
        self._weights[(term, fields)] = (rows, weights)
        return rows, weights

    def search(
        self,
        revision: int,
        terms: Sequence[str],
        limit: int,
        fields: FieldWeights,
        allowed: npt.NDArray[np.int64] | None = None,
        term_ceiling: Callable[[int], float | None] | None = None,
        common_entries: int | None = None,
    ) -> list[FtsCandidate]:
        """The best `limit` versions active at `revision` (and among the `allowed` keys, when
        a filter gave some), best first (ties by key); a term held in its own field by more
        rows than `term_ceiling(rows)` is left out (FtsQuery.term_ceiling), and one held by
        more than `common_entries` finds no row by itself (FtsQuery.common_term_entries)."""
        most = term_ceiling(self.size) if term_ceiling is not None else None
        if most is not None:
            own = bm25.scored_fields(fields)[0].prefix
            terms = [t for t in terms if (p := self.terms.get(own + t)) is None or p.size <= most]
        weighed = [(t, w) for t in dict.fromkeys(terms) if (w := self._term_weights(t, fields))]
        found = [w for _, w in weighed]
        if not found or limit <= 0:
            return []
        finders = self._finders([t for t, _ in weighed], fields, common_entries)
        if finders is None:
            return self._top(revision, found, limit, allowed)
        # Only rows a rarer term finds may be returned: masked by key, as a filter's are.
        held = self.keys[finders]
        best = self._top(
            revision, found, limit, np.intersect1d(held, allowed) if allowed is not None else held
        )
        if len(best) < limit:  # fewer rows hold a rarer term than asked for: the common find too
            best = self._top(revision, found, limit, allowed)
        return best

    def _top(
        self, revision: int, found: _Weights, limit: int, allowed: _Keys
    ) -> list[FtsCandidate]:
        if sum(term_rows.shape[0] for term_rows, _ in found) * _SPARSE_SHARE < self.size:
            return self._search_sparse(revision, found, limit, allowed)
        scores = np.zeros(self.size, dtype=np.float64)
        for term_rows, weights in found:
            # A term's rows are distinct, so a fancy-indexed add never drops a repeat.
            scores[term_rows] += weights
        scores[self._inactive_rows(revision)] = 0.0
        if allowed is not None:
            # The filter masks before the partition: a selective filter still fills `limit`.
            keep = np.zeros(self.size, dtype=bool)
            keep[_rows_of(self.keys[: self.size], allowed)] = True
            scores[~keep] = 0.0
        # Common words match much of a scope; rare ones go to _search_sparse. Partition only
        # the rows that scored: finding them is one pass over the scope, and the partition
        # then works on the matches alone (never slower than one over every row).
        rows = np.flatnonzero(scores > 0)
        if limit < rows.size:
            matched = scores[rows]
            cut = matched[np.argpartition(-matched, limit - 1)[:limit]].min()
            # The partition picks any of the rows tied at the cut; ties go by key, so every
            # row at the cut's score competes.
            rows = rows[matched >= cut]
        return self._candidates(rows, scores[rows], limit)

    def _finders(
        self, terms: Sequence[str], fields: FieldWeights, common_entries: int | None
    ) -> npt.NDArray[np.int32] | None:
        """The rows holding a term that finds rows by itself (FtsQuery.common_term_entries):
        one held in its own field by at most `common_entries` rows, or else the rarest (the
        first of the question's on a tie). None: every term finds rows."""
        if common_entries is None or len(terms) < 2:
            return None
        scored = bm25.scored_fields(fields)
        dfs = [
            bm25.term_df([p.size if (p := self.terms.get(f.prefix + t)) else 0 for f in scored])
            for t in terms
        ]
        finding = [df <= common_entries for df in dfs]
        if all(finding):
            return None
        if not any(finding):
            finding[dfs.index(min(dfs))] = True
        weights = [
            self._term_weights(t, fields) for t, finds in zip(terms, finding, strict=True) if finds
        ]
        return np.concatenate([found[0] for found in weights if found is not None])

    def _search_sparse(
        self, revision: int, found: _Weights, limit: int, allowed: _Keys
    ) -> list[FtsCandidate]:
        """`search` when the terms are rare: only the rows holding one are scored, each row's
        sum taken in the same term order as the dense path (the same floats, the same ranks)."""
        rows: npt.NDArray[np.int64]
        if len(found) == 1:  # a term's rows are distinct: nothing to add up
            rows, scores = found[0][0].astype(np.int64), found[0][1].copy()
        else:
            rows, inverse = np.unique(
                np.concatenate([term_rows for term_rows, _ in found]), return_inverse=True
            )
            scores = np.bincount(
                inverse.reshape(-1),
                weights=np.concatenate([weights for _, weights in found]),
                minlength=rows.shape[0],
            ).astype(np.float64, copy=False)
        inactive = self._inactive_rows(revision)
        if inactive.size:
            scores[np.isin(rows, inactive)] = 0.0
        if allowed is not None:
            scores[~np.isin(rows, _rows_of(self.keys[: self.size], allowed))] = 0.0
        keep = scores > 0
        return self._candidates(rows[keep], scores[keep], limit)

    def _candidates(
        self, rows: npt.NDArray[np.int64], scores: npt.NDArray[np.float64], limit: int
    ) -> list[FtsCandidate]:
        """The best `limit` of these rows (their scores all > 0), best first, ties by key."""
        keys = self.keys[rows]
        order = np.lexsort((keys, -scores))[:limit]
        tokens = self.tokens
        # Positional: a NamedTuple built from keywords costs half as much again, per candidate.
        return [
            FtsCandidate(key, score, tokens(row))
            for key, score, row in zip(
                keys[order].tolist(),
                scores[order].tolist(),
                rows[order].tolist(),
                strict=True,
            )
        ]


def _rows_of(keys: npt.NDArray[np.int64], wanted: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Rows of the `wanted` keys that are cached (`keys` ascending); unknown keys are skipped."""
    rows = np.searchsorted(keys, wanted)
    inside = rows < keys.shape[0]
    rows, wanted = rows[inside], wanted[inside]
    found: npt.NDArray[np.int64] = rows[keys[rows] == wanted]
    return found
