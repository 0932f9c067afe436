"""In-memory BM25 over cached per-scope postings; FTS5 stays the durable index.

FTS5's bm25() scores every row that matches any query term before ORDER BY ... LIMIT can
cut, and a query of common words matches most of a scope: at 100k entries that was ~240 ms
per query. Here each scope keeps its postings in numpy arrays (one pair of arrays per term:
row positions and term frequencies), so a query is a few vectorized adds over the query terms'
postings, a revision mask, and an argpartition.

The cache is filled from the database, not from the write path: rows with a key above the
last one seen, and removals after the last head seen, inside the caller's read transaction.
Writes from other processes are therefore picked up too, and a search always sees at least
the revision it names. Keys are assigned in ascending order, so a scope's rows are appended
in key order and a key's row is found by binary search.

Each row's distinct term ids are kept too (one int32 per distinct token), so a candidate's
tokens, which the admission rule needs, come from memory; reading them back from FTS5 was a
third of a warm query.

A version's tokens can be rewritten after its insert (contextual indexing: a later entry of
its thread became its neighbour). `fts_rewrites` names such versions; each refresh replays
the rows newer than the last `seq` it saw, replacing the cached row's term frequencies, length
and token set. A term the new tokens lack keeps its posting at frequency 0, so its document
frequency can overcount by the rewritten rows (contextual rewrites only ever add words).

Statistics (document count, average length, document frequencies) cover every cached
version of the scope, retired ones included, like FTS5's cover the whole table: the ranking
is BM25-like and stable, while the revision mask decides exactly which versions are returned.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from powercontext.memory.search.fields import CONTEXT_PREFIX, FieldWeights, own_length
from powercontext.storage.sqlite import term_snapshots
from powercontext.storage.sqlite.fts_scoring import ScopeScoring
from powercontext.storage.sqlite.lru import LruCache
from powercontext.storage.sqlite.postings import Postings
from powercontext.storage.sqlite.reads import head_and_erasures
from powercontext.storage.sqlite.scope_cache import ScopeCache
from powercontext.storage.sqlite.vectors import NOT_REMOVED, grow

_REPLAY_LIMIT = 1_000
"""Rewritten rows replayed one by one; beyond this (and a tenth of the scope) the cache is
read afresh, since each replayed row scans its terms' postings."""
_FETCH = 20_000
"""Rows read per fetchmany while filling the cache, bounding the transient Python objects."""


class ScopeTerms(ScopeScoring, ScopeCache):
    """The cached postings of one scope (snapshot: term_snapshots.py). Callers hold `lock`
    around refresh + search."""

    def __init__(
        self, scope_id: str, snapshot: Path | None = None, snapshot_min_rows: int = 20_000
    ) -> None:
        super().__init__(scope_id, snapshot)
        self._snapshot_min_rows = snapshot_min_rows
        self.reset()

    def reset(self) -> None:
        self.snapshot_size = 0
        self.rows_since_snapshot = 0
        """Rows read from the database since the snapshot was written or mapped."""
        self.size = 0
        self.keys: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.added: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.removed: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.lengths: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self.total_length = 0.0
        # BM25F normalizes each field by its own length (search.fields): own words, and the
        # neighbours' `_` words. The speaker field is a name or two and is not normalized.
        self.own_lengths: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self.own_total = 0.0
        self.context_lengths: npt.NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self.context_total = 0.0
        self.terms: dict[str, Postings] = {}
        self.term_ids: dict[str, int] = {}
        self.names: list[str] = []
        # Each row's distinct term ids, rows one after another; a row's run ends at token_end.
        # Candidates need their tokens (for admission), and reading them back from FTS5 cost
        # a third of a warm query.
        self.row_tokens: npt.NDArray[np.int32] = np.zeros(1024, dtype=np.int32)
        self.token_used = 0
        self.token_end: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.last_key = 0
        self.last_head = 0
        self.last_rewrite = 0
        self.erasures = 0
        """The scope's erasure count when the cache was filled (see storage.sqlite.erasure)."""
        self.rewritten: dict[int, npt.NDArray[np.int32]] = {}
        """Distinct term ids of rows whose tokens were rewritten after they were cached."""
        self._token_sets: dict[int, frozenset[str]] = {}
        """Rows' token sets as built for earlier candidates: a row's own run never changes once
        appended (a rewrite goes to `rewritten`, read first), and popular entries are candidates
        of many searches. Bounded by _TOKEN_SETS, emptied when full."""
        self._inactive: tuple[int, npt.NDArray[np.int64]] | None = None
        # Norms, weights and scores are float64 (lengths and frequencies, small integers, are
        # exact in float32): PostgreSQL scores in float8 and both must rank ties alike.
        self._norms: dict[str, npt.NDArray[np.float64]] = {}
        self._weights: dict[
            tuple[str, FieldWeights], tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]
        ] = {}

    def refresh(self, conn: sqlite3.Connection, *, persist: bool = True) -> None:
        """Catch up with the database, within the caller's read transaction; `persist`: also
        write the snapshot file when one is due."""
        head = self.catch_up(conn, term_snapshots.restore, self.reset)
        rewrite = self._last_rewrite_seq(conn)
        if rewrite > self.last_rewrite and self._many_rewrites(conn):
            self.reset()  # a rebuild rewrote much of the scope: reading it afresh is cheaper
        cached = self.last_key
        if head > self.last_head:
            self._catch_up(conn, head)
        if rewrite > self.last_rewrite:
            self._replay_rewrites(conn, rewrite, cached)
        if persist and term_snapshots.due(self, self._snapshot_min_rows):
            term_snapshots.save(self)

    def is_current(self, conn: sqlite3.Connection) -> bool:
        """Whether `refresh` would find nothing to read: the same head, erasures and token
        rewrites as when the cache was last filled (then a search may skip it)."""
        if not self._snapshot_tried:
            return False
        head, erasures = head_and_erasures(conn, self.scope_id)
        if head != self.last_head or erasures != self.erasures:
            return False
        return self._last_rewrite_seq(conn) <= self.last_rewrite

    def refresh_if_small(self, conn: sqlite3.Connection, rows: int) -> bool:
        """Catch up now when that means reading at most `rows` new versions, retirements and
        token rewrites and nothing else (no snapshot to map first, no erasure to drop), without
        writing a snapshot: the few rows a write or two added, cheap enough for a search on
        the event loop. False when the cache is further behind (`refresh` in a thread)."""
        if not self._snapshot_tried:
            return False
        if head_and_erasures(conn, self.scope_id)[1] != self.erasures:
            return False
        pending = conn.execute(
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM entry_versions "
            "WHERE scope_id = ?1 AND key > ?2 LIMIT ?5)) + (SELECT count(*) FROM (SELECT 1 "
            "FROM entry_versions WHERE scope_id = ?1 AND removed_revision > ?3 LIMIT ?5)) + "
            "(SELECT count(*) FROM (SELECT 1 FROM fts_rewrites "
            "WHERE scope_id = ?1 AND seq > ?4 LIMIT ?5))",
            (self.scope_id, self.last_key, self.last_head, self.last_rewrite, rows + 1),
        ).fetchone()[0]
        if int(pending) > rows:
            return False
        self.refresh(conn, persist=False)
        return True

    def _last_rewrite_seq(self, conn: sqlite3.Connection) -> int:
        row = conn.execute(
            "SELECT max(seq) FROM fts_rewrites WHERE scope_id = ?", (self.scope_id,)
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _many_rewrites(self, conn: sqlite3.Connection) -> bool:
        row = conn.execute(
            "SELECT count(*) FROM fts_rewrites WHERE scope_id = ? AND seq > ?",
            (self.scope_id, self.last_rewrite),
        ).fetchone()
        return int(row[0]) > max(_REPLAY_LIMIT, self.size // 10)

    def _replay_rewrites(self, conn: sqlite3.Connection, upto: int, cached: int) -> None:
        """Rows cached before this refresh take their rewritten tokens; rows the catch-up just
        read (keys above `cached`) already hold them in this snapshot."""
        rows = conn.execute(
            "SELECT r.key, f.tokens FROM fts_rewrites r JOIN entry_fts f ON f.rowid = r.key "
            "WHERE r.scope_id = ? AND r.seq > ? AND r.seq <= ? AND r.key <= ? ORDER BY r.seq",
            (self.scope_id, self.last_rewrite, upto, cached),
        ).fetchall()
        for key, tokens in rows:
            position = int(np.searchsorted(self.keys[: self.size], key))
            if position < self.size and int(self.keys[position]) == key:
                self._rewrite_row(position, tokens.split())
        self.last_rewrite = upto
        if rows:
            self._weights.clear()
            self._norms.clear()

    def _rewrite_row(self, row: int, tokens: list[str]) -> None:
        counts: dict[str, int] = {}
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
        for term in self.tokens(row) - counts.keys():
            self._set_tf(self.terms[term], row, 0.0)
        ids = []
        for term, tf in counts.items():
            postings = self.terms.get(term)
            if postings is None:
                postings = self.terms[term] = Postings()
                self.term_ids[term] = len(self.names)
                self.names.append(term)
            if not self._set_tf(postings, row, float(tf)):
                postings.extend(np.array([row], dtype=np.int32), np.array([tf], dtype=np.float32))
            ids.append(self.term_ids[term])
        self.rewritten[row] = np.asarray(ids, dtype=np.int32)
        self._set_lengths(row, row + 1, [tokens])

    @staticmethod
    def _set_tf(postings: Postings, row: int, tf: float) -> bool:
        found = np.flatnonzero(postings.rows[: postings.size] == row)
        if found.size == 0:
            return False
        postings.tfs[found[0]] = tf
        return True

    def _catch_up(self, conn: sqlite3.Connection, head: int) -> None:
        cursor = conn.execute(
            "SELECT v.key, v.added_revision, v.removed_revision, f.tokens "
            "FROM entry_versions v JOIN entry_fts f ON f.rowid = v.key "
            "WHERE v.scope_id = ? AND v.key > ? ORDER BY v.key",
            (self.scope_id, self.last_key),
        )
        while batch := cursor.fetchmany(_FETCH):
            self._append(batch)
        if self.last_head and self.size:
            self._apply_removals(conn)
        self.last_head = head
        self._inactive = None

    def _append(self, rows: Sequence[tuple[int, int, int | None, str]]) -> None:
        count = len(rows)
        start = self.size
        self._reserve(start + count)
        end = start + count
        self.keys[start:end] = [row[0] for row in rows]
        self.added[start:end] = [row[1] for row in rows]
        self.removed[start:end] = [NOT_REMOVED if row[2] is None else row[2] for row in rows]
        token_lists = [row[3].split() for row in rows]
        lengths = self._set_lengths(start, end, token_lists)
        self.size = end
        self.rows_since_snapshot += count
        self.last_key = int(rows[-1][0])
        self._weights.clear()  # the average length changed
        self._norms.clear()
        vocabulary: dict[str, int] = {}
        flat = [vocabulary.setdefault(t, len(vocabulary)) for tokens in token_lists for t in tokens]
        if not flat:
            self.token_end[start:end] = self.token_used
            return
        term_ids = np.asarray(flat, dtype=np.int64)
        doc_rows = np.repeat(np.arange(start, end, dtype=np.int64), lengths.astype(np.int64))
        # One (term, row) pair per distinct token of a row, sorted by term then row.
        pairs, tfs = np.unique(term_ids * end + doc_rows, return_counts=True)
        pair_terms = pairs // end
        pair_rows = (pairs % end).astype(np.int32)
        bounds = np.flatnonzero(np.diff(pair_terms)) + 1
        starts = np.concatenate(([0], bounds))
        stops = np.concatenate((bounds, [pairs.shape[0]]))
        names = list(vocabulary)
        to_global = np.zeros(len(names), dtype=np.int32)
        tf_values = tfs.astype(np.float32)
        for first, stop in zip(starts.tolist(), stops.tolist(), strict=True):
            local = int(pair_terms[first])
            name = names[local]
            postings = self.terms.get(name)
            if postings is None:
                postings = self.terms[name] = Postings()
                self.term_ids[name] = len(self.names)
                self.names.append(name)
            to_global[local] = self.term_ids[name]
            postings.extend(pair_rows[first:stop], tf_values[first:stop])
        self._append_row_tokens(start, count, pair_rows, to_global[pair_terms])

    def _set_lengths(
        self, start: int, end: int, token_lists: list[list[str]]
    ) -> npt.NDArray[np.float32]:
        """Total, own and context lengths of rows start..end (replacing what they held)."""
        count = end - start
        lengths = np.fromiter((len(t) for t in token_lists), dtype=np.float32, count=count)
        own = np.fromiter((own_length(t) for t in token_lists), dtype=np.float32, count=count)
        context = np.fromiter(
            (sum(1 for x in t if x.startswith(CONTEXT_PREFIX)) for t in token_lists),
            dtype=np.float32,
            count=count,
        )
        self.total_length += float(lengths.sum() - self.lengths[start:end].sum())
        self.own_total += float(own.sum() - self.own_lengths[start:end].sum())
        self.context_total += float(context.sum() - self.context_lengths[start:end].sum())
        self.lengths[start:end] = lengths
        self.own_lengths[start:end] = own
        self.context_lengths[start:end] = context
        return lengths

    def _append_row_tokens(
        self,
        start: int,
        count: int,
        pair_rows: npt.NDArray[np.int32],
        pair_terms: npt.NDArray[np.int32],
    ) -> None:
        order = np.argsort(pair_rows, kind="stable")
        used = self.token_used + order.shape[0]
        if used > self.row_tokens.shape[0]:
            self.row_tokens = grow(self.row_tokens, max(used, 2 * self.row_tokens.shape[0]))
        self.row_tokens[self.token_used : used] = pair_terms[order]
        per_row = np.bincount(pair_rows - start, minlength=count)
        self.token_end[start : start + count] = self.token_used + np.cumsum(per_row)
        self.token_used = used

    def _reserve(self, needed: int) -> None:
        if needed <= self.keys.shape[0]:
            return
        capacity = max(needed, 2 * self.keys.shape[0], 1024)
        self.keys = grow(self.keys, capacity)
        self.added = grow(self.added, capacity)
        self.removed = grow(self.removed, capacity)
        self.lengths = grow(self.lengths, capacity)
        self.own_lengths = grow(self.own_lengths, capacity)
        self.context_lengths = grow(self.context_lengths, capacity)
        self.token_end = grow(self.token_end, capacity)

    def _apply_removals(self, conn: sqlite3.Connection) -> None:
        found = conn.execute(
            "SELECT key, removed_revision FROM entry_versions "
            "WHERE scope_id = ? AND removed_revision > ?",
            (self.scope_id, self.last_head),
        ).fetchall()
        if not found:
            return
        keys = np.asarray([row[0] for row in found], dtype=np.int64)
        removed = np.asarray([row[1] for row in found], dtype=np.int64)
        positions = np.searchsorted(self.keys[: self.size], keys)
        known = positions < self.size
        known[known] = self.keys[positions[known]] == keys[known]
        self.removed[positions[known]] = removed[known]


class TermCache:
    """ScopeTerms by scope, least recently used evicted beyond `max_scopes`."""

    def __init__(
        self, max_scopes: int = 64, db_path: str | None = None, snapshot_min_rows: int = 20_000
    ) -> None:
        self._db_path = db_path
        self._snapshot_min_rows = snapshot_min_rows
        self._scopes: LruCache[str, ScopeTerms] = LruCache(max_scopes)

    def get(self, scope_id: str) -> ScopeTerms:
        return self._scopes.get(scope_id, lambda: self._load(scope_id))

    def _load(self, scope_id: str) -> ScopeTerms:
        snapshot = (
            None if self._db_path is None else term_snapshots.snapshot_path(self._db_path, scope_id)
        )
        return ScopeTerms(scope_id, snapshot, self._snapshot_min_rows)

    def clear(self) -> None:
        self._scopes.clear()

    def drop(self, scope_id: str) -> None:
        """Forget a scope's cached postings (after an erasure in this process), once no
        refresh of them is in flight. Such a refresh read the scope before the erasure and
        would write its snapshot, erased tokens included, after the caller deleted the
        snapshot files; any later refresh reads the erasure first and starts afresh."""
        for dropped in self._scopes.drop(lambda key: key == scope_id):
            with dropped.lock:
                pass
