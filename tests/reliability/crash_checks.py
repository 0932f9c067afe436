"""What must hold after a writer was killed: the checks of bench/crash_safety.py.

Writers journal an *intent* before each call and an *ack* after it returns (both fsynced), one
journal file per writer process. The checks compare those journals with the database, read
with plain SQL so nothing of the store's own read path can hide a problem:

- revisions are exactly 1..head, each with its complete change list (seq 1..n, n equal to the
  recorded change count), and every revision's active count is what its versions say;
- every version's addition and retirement is recorded by a change of that revision, and no
  entry has two active versions;
- the full-text rows are exactly the analyzer's tokens of the stored text (SQLite: the FTS5
  table; PostgreSQL: the tsvector column, the term statistics and the lexeme total);
- every acknowledged write is present with its exact text and ids at its revision;
- a revision nobody acknowledged is exactly the in-flight intent of a killed writer.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from powercontext.memory.search.analyze import index_tokens
from powercontext.storage import sqlite_path

_CARRIES_NEW = ("add", "revise", "reactivate")
_RETIRES = ("revise", "retire")


@dataclass
class Writer:
    name: str
    acks: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, Any] | None = None
    """The intent the writer was carrying out when it died (no ack followed)."""
    torn: bool = False


@dataclass
class Snapshot:
    head: int | None
    revisions: dict[int, tuple[int, int]]
    """revision -> (active_count, change_count)"""
    changes: dict[int, list[tuple[int, str, str, str, str | None]]]
    """revision -> [(seq, op, entry_id, entry_version_id, previous_entry_version_id)]"""
    versions: dict[str, tuple[str, int, int | None, str, int]]
    """entry_version_id -> (entry_id, added_revision, removed_revision, text, key)"""
    problems: list[str] = field(default_factory=list)
    """Backend-specific findings (integrity checks, full-text rows)."""


def read_journals(directory: Path, pattern: str = "*.jsonl") -> tuple[list[Writer], list[str]]:
    writers, problems = [], []
    for path in sorted(directory.glob(pattern)):
        writer = Writer(path.stem)
        lines = path.read_bytes().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for number, line in enumerate(lines):
            try:
                record = json.loads(line)
            except ValueError:
                if number == len(lines) - 1:  # killed inside the write of its last line
                    writer.torn = True
                    continue
                problems.append(f"{path.name}:{number + 1} is not a JSON line")
                continue
            if record["t"] == "intent":
                writer.pending = record
            elif record["t"] == "ack":
                if writer.pending is None or writer.pending["seq"] != record["seq"]:
                    problems.append(f"{path.name}:{number + 1} acknowledges no intent")
                writer.acks.append(record)
                writer.pending = None
        writers.append(writer)
    return writers, problems


def _sqlite_snapshot(path: str, scope_id: str) -> Snapshot:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        problems = []
        integrity = conn.execute("PRAGMA integrity_check").fetchall()
        if integrity != [("ok",)]:
            problems.append(f"integrity_check: {integrity[:5]}")
        foreign = conn.execute("PRAGMA foreign_key_check").fetchall()
        if foreign:
            problems.append(f"foreign_key_check: {foreign[:5]}")
        try:
            conn.execute("INSERT INTO entry_fts (entry_fts) VALUES ('integrity-check')")
        except sqlite3.Error as exc:
            problems.append(f"FTS5 integrity-check: {exc}")
        snapshot = _generic_snapshot(conn, "?", scope_id, problems)
        row = conn.execute("SELECT scope_key FROM scopes WHERE scope_id = ?", (scope_id,))
        scope_key = row.fetchone()
        fts = {}
        if scope_key is not None:
            fts = dict(
                conn.execute(
                    "SELECT rowid, tokens FROM entry_fts WHERE scope_tag = ?",
                    (f"s{scope_key[0]}",),
                ).fetchall()
            )
        by_key = {v[4]: v[3] for v in snapshot.versions.values()}
        if set(fts) != set(by_key):
            problems.append(
                f"{len(set(fts) ^ set(by_key))} versions and full-text rows do not pair up"
            )
        wrong = [key for key, text in by_key.items() if fts.get(key) != index_tokens(text)]
        if wrong:
            problems.append(f"{len(wrong)} full-text rows differ from their text, e.g. {wrong[:3]}")
        return snapshot
    finally:
        conn.close()


def _postgres_snapshot(url: str, scope_id: str) -> Snapshot:
    import psycopg

    from powercontext.storage.postgres.connection import split_url
    from powercontext.storage.postgres.fulltext import indexed_text

    conninfo, _ = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        problems: list[str] = []
        snapshot = _generic_snapshot(conn, "%s", scope_id, problems)
        rows = conn.execute(
            "SELECT entry_version_id, tsvector_to_array(tokens) FROM entry_versions "
            "WHERE scope_id = %s",
            (scope_id,),
        ).fetchall()
        # what the store writes: the tokens, and a repeat mark for each token that repeats
        wrong = [
            vid for vid, lexemes in rows
            if set(lexemes) != set(indexed_text(index_tokens(snapshot.versions[vid][3])).lexemes)
        ]  # fmt: skip
        if wrong:
            problems.append(f"{len(wrong)} tsvectors differ from their text, e.g. {wrong[:3]}")
        df: Counter[str] = Counter()
        lexemes = 0
        for vid, terms in rows:
            if snapshot.versions[vid][2] is None:
                df.update(set(terms))
                lexemes += len(set(terms))
        stored: dict[str, int] = dict(
            conn.execute(
                "SELECT term, df FROM term_stats WHERE scope_id = %s AND df > 0", (scope_id,)
            ).fetchall()
        )
        if stored != dict(df):
            problems.append(f"term_stats differ for {len(set(stored.items()) ^ set(df.items()))}")
        scope = conn.execute(
            "SELECT active_count, lexeme_total FROM scopes WHERE scope_id = %s", (scope_id,)
        ).fetchone()
        if scope is not None and snapshot.head is not None:
            if int(scope[0]) != snapshot.revisions.get(snapshot.head, (-1, 0))[0]:
                problems.append(f"scopes.active_count {scope[0]} differs from the head's")
            if int(scope[1]) != lexemes:
                problems.append(f"scopes.lexeme_total {scope[1]}, active lexemes {lexemes}")
        # The BM25F length totals are the sums of the active versions' own lengths.
        totals = conn.execute(
            "SELECT s.own_length_total, s.context_length_total, "
            "(SELECT coalesce(sum(own_length), 0) FROM entry_versions v "
            " WHERE v.scope_id = s.scope_id AND v.removed_revision IS NULL), "
            "(SELECT coalesce(sum(context_length), 0) FROM entry_versions v "
            " WHERE v.scope_id = s.scope_id AND v.removed_revision IS NULL) "
            "FROM scopes s WHERE s.scope_id = %s",
            (scope_id,),
        ).fetchone()
        if totals is not None and (totals[0], totals[1]) != (totals[2], totals[3]):
            problems.append(f"scopes length totals {totals[:2]}, active versions' {totals[2:]}")
        return snapshot


def _generic_snapshot(conn: Any, mark: str, scope_id: str, problems: list[str]) -> Snapshot:
    def rows(sql: str) -> list[Any]:
        return list(conn.execute(sql.replace("?", mark), (scope_id,)).fetchall())

    head_rows = rows("SELECT head_revision FROM scopes WHERE scope_id = ?")
    changes: dict[int, list[tuple[int, str, str, str, str | None]]] = {}
    for revision, seq, op, eid, vid, previous in rows(
        "SELECT revision, seq, op, entry_id, entry_version_id, previous_entry_version_id "
        "FROM changes WHERE scope_id = ? ORDER BY revision, seq"
    ):
        changes.setdefault(int(revision), []).append((int(seq), op, eid, vid, previous))
    return Snapshot(
        head=int(head_rows[0][0]) if head_rows else None,
        revisions={
            int(r): (int(active), int(count))
            for r, active, count in rows(
                "SELECT revision, active_count, change_count FROM revisions WHERE scope_id = ?"
            )
        },
        changes=changes,
        versions={
            vid: (eid, int(added), None if removed is None else int(removed), text, int(key))
            for vid, eid, added, removed, text, key in rows(
                "SELECT entry_version_id, entry_id, added_revision, removed_revision, text, key "
                "FROM entry_versions WHERE scope_id = ?"
            )
        },
        problems=problems,
    )


def snapshot(url: str, scope_id: str) -> Snapshot:
    if url.startswith("sqlite:///"):
        return _sqlite_snapshot(sqlite_path(url), scope_id)
    return _postgres_snapshot(url, scope_id)


def structure_problems(snap: Snapshot) -> list[str]:
    """Revisions contiguous and complete; active counts and change rows agree with versions."""
    problems = []
    head = snap.head or 0
    if sorted(snap.revisions) != list(range(1, head + 1)):
        problems.append(f"revisions are not 1..{head}: {len(snap.revisions)} rows")
    if set(snap.changes) - set(snap.revisions):
        problems.append("changes of revisions that do not exist")
    added, removed = Counter[int](), Counter[int]()
    for _, first, last, _, _ in snap.versions.values():
        added[first] += 1
        if last is not None:
            removed[last] += 1
    active = 0
    for revision in range(1, head + 1):
        active_count, change_count = snap.revisions.get(revision, (-1, -1))
        listed = snap.changes.get(revision, [])
        if [c[0] for c in listed] != list(range(1, change_count + 1)):
            problems.append(f"revision {revision}: {len(listed)} changes, {change_count} recorded")
        active += added[revision] - removed[revision]
        if active != active_count:
            problems.append(f"revision {revision}: active_count {active_count}, versions {active}")
        if sum(c[1] in _CARRIES_NEW for c in listed) != added[revision]:
            problems.append(f"revision {revision}: new versions and changes disagree")
        if sum(c[1] in _RETIRES for c in listed) != removed[revision]:
            problems.append(f"revision {revision}: retired versions and changes disagree")
    new_at = {(r, c[3]) for r, cs in snap.changes.items() for c in cs if c[1] in _CARRIES_NEW}
    gone_at = {(r, c[4]) for r, cs in snap.changes.items() for c in cs if c[1] in _RETIRES}
    heads = Counter(v[0] for v in snap.versions.values() if v[2] is None)
    for vid, (_, first, last, _, _) in snap.versions.items():
        if (first, vid) not in new_at or (last is not None and (last, vid) not in gone_at):
            problems.append(f"version {vid} is not recorded by the changes of its revisions")
            break
    if heads and max(heads.values()) > 1:
        problems.append("an entry has two active versions")
    return problems


def _written(snap: Snapshot, revision: int) -> list[tuple[str, str, str, str | None]]:
    return [(op, eid, vid, prev) for _, op, eid, vid, prev in snap.changes.get(revision, [])]


def _ack_problems(snap: Snapshot, ack: dict[str, Any]) -> list[str]:
    revision, op = ack["revision"], ack["op"]
    if op == "retire":
        previous = ack["previous"]
        entry_id = snap.versions.get(previous, ("?",))[0]
        expected = [("retire", entry_id, previous, previous)]
    else:
        kind = "add" if op == "remember" else "revise"
        expected = [(kind, eid, vid, ack["previous"]) for eid, vid, _ in ack["entries"]]
    problems = []
    if _written(snap, revision) != expected:
        problems.append(f"acknowledged revision {revision} ({op}) is not what was written")
    for eid, vid, text in ack["entries"]:
        stored = snap.versions.get(vid)
        if stored is None or stored[:2] != (eid, revision) or stored[3] != text:
            problems.append(f"acknowledged version {vid} of revision {revision} is missing/wrong")
    if op != "remember" and snap.versions.get(ack["previous"], (0, 0, None))[2] != revision:
        problems.append(f"revision {revision} did not retire {ack['previous']}")
    return problems


def _matches(snap: Snapshot, intent: dict[str, Any], revision: int) -> bool:
    written = _written(snap, revision)
    texts = [snap.versions[vid][3] if vid in snap.versions else None for _, _, vid, _ in written]
    ops = {"remember": "add", "revise": "revise", "retire": "retire"}
    if any(op != ops[intent["op"]] for op, _, _, _ in written):
        return False
    if intent["op"] == "remember":
        return bool(texts == intent["texts"])
    if len(written) != 1 or written[0][3] != intent["previous"]:
        return False
    return bool(intent["op"] == "retire" or texts == intent["texts"])


def check(url: str, scope_id: str, journals: Path) -> dict[str, Any]:
    """Compare the journals with the database; `problems` is empty when everything holds."""
    writers, problems = read_journals(journals)
    snap = snapshot(url, scope_id)
    problems += snap.problems + structure_problems(snap)
    acked: set[int] = set()
    for writer in writers:
        for ack in writer.acks:
            if ack["revision"] in acked:
                problems.append(f"revision {ack['revision']} acknowledged twice")
            acked.add(ack["revision"])
            problems += _ack_problems(snap, ack)
    pending = [w.pending for w in writers if w.pending is not None]
    committed = 0
    for revision in sorted(set(snap.revisions) - acked):
        found = next((i for i in pending if _matches(snap, i, revision)), None)
        if found is None:
            problems.append(f"revision {revision} matches no in-flight intent")
            continue
        pending.remove(found)
        committed += 1
    in_flight = sum(w.pending is not None for w in writers)
    return {
        "problems": problems,
        "head": snap.head,
        "versions_checked": len(snap.versions),
        "journal": {
            "writers": len(writers),
            "acknowledged_revisions": len(acked),
            "acknowledged_versions": sum(len(a["entries"]) for w in writers for a in w.acks),
            "killed_in_flight": in_flight,
            "in_flight_committed": committed,
            "in_flight_rolled_back": in_flight - committed,
            "torn_journal_lines": sum(w.torn for w in writers),
        },
    }
