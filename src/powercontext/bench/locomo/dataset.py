"""Load LoCoMo conversations (the official `locomo10.json` format) into typed records.

The published file has quirks; each is normalised where the intent is unambiguous and counted
in `DatasetIssues` either way, so a report can say exactly what was scored.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

# Re-exported: the loader's public surface predates the split into these modules.
from powercontext.bench.locomo.dataset_issues import DatasetIssues
from powercontext.bench.locomo.evidence_ids import (
    canonical_dia_id,
    normalize_evidence,
    resolve_evidence,
)
from powercontext.bench.locomo.session_dates import parse_session_date
from powercontext.memory.values import MAX_TEXT_BYTES

__all__ = [
    "CATEGORY_NAMES",
    "SCORED_CATEGORIES",
    "Conversation",
    "Dataset",
    "DatasetError",
    "DatasetIssues",
    "QAItem",
    "Session",
    "Turn",
    "canonical_dia_id",
    "load_dataset",
    "normalize_evidence",
    "parse_dataset",
    "parse_session_date",
    "resolve_evidence",
]

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""The mapping of the authors' evaluation code; other harnesses number these differently."""

SCORED_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
"""Categories averaged into "overall": category 5 has no answer to retrieve evidence for."""

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_KEY = re.compile(r"session_(\d+)_date_time")


class DatasetError(ValueError):
    """The file is not in the LoCoMo format (as opposed to a quirk that can be counted)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One turn of a session. Keyword-only: its two ints and three strs are easy to swap."""

    dia_id: str
    """Canonical `D<session>:<turn>` (leading zeros dropped), as evidence lists cite it."""
    session: int
    position: int
    """0-based position of the turn inside its session."""
    speaker: str
    """The file's speaker name; "unknown" where the turn names none."""
    text: str
    caption: str | None = None
    """The file's `blip_caption` of a shared image, when the turn has one."""

    @property
    def line(self) -> str:
        """The turn as one transcript line, `Speaker: text`, with an image caption appended the
        way the authors' code does: what the harness writes and shows an answering model."""
        line = f"{self.speaker}: {self.text}" if self.text else f"{self.speaker}:"
        if self.caption:
            line += f" and shared {self.caption}."
        return line


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date_time: str | None
    """As the file writes it, e.g. `1:56 pm on 8 May, 2023`."""
    turns: tuple[Turn, ...]

    @property
    def occurred_at(self) -> datetime | None:
        """`date_time` as a UTC moment; None when it is missing or not in the file's format."""
        return parse_session_date(self.date_time)


@dataclass(frozen=True, slots=True)
class QAItem:
    index: int
    """Position of the item in the sample's `qa` list: its stable id within the conversation."""
    question: str
    category: int
    answer: str | None
    """None for adversarial items that only carry `adversarial_answer`."""
    adversarial_answer: str | None
    evidence: tuple[str, ...]
    """The retrieval gold: canonical dia ids of written turns, in the file's order, deduplicated.
    Empty when the item cannot be scored: no evidence, or an id naming no written turn."""
    raw_evidence: tuple[str, ...]
    unresolved_evidence: tuple[str, ...] = ()
    """Ids naming no written turn. Their item is unscorable for retrieval (its gold is
    incomplete), so `evidence` is then empty rather than scored as a hit or a miss."""

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES.get(self.category, f"category-{self.category}")


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    qa: tuple[QAItem, ...]
    turns_by_id: dict[str, Turn] = field(repr=False)
    issues: DatasetIssues = field(default_factory=DatasetIssues, repr=False, compare=False)
    """This conversation's quirks, so a run over a selection reports only its own."""

    @property
    def turn_count(self) -> int:
        return sum(len(session.turns) for session in self.sessions)

    def session(self, number: int) -> Session | None:
        for session in self.sessions:
            if session.number == number:
                return session
        return None


@dataclass(frozen=True, slots=True)
class Dataset:
    source: str
    sha256: str
    conversations: tuple[Conversation, ...]
    issues: DatasetIssues

    @property
    def question_count(self) -> int:
        return sum(len(conversation.qa) for conversation in self.conversations)

    def issues_for(self, sample_ids: Iterable[str]) -> DatasetIssues:
        """The quirks of these conversations only: what a run over them left out or repaired."""
        wanted = set(sample_ids)
        return DatasetIssues.merged(c.issues for c in self.conversations if c.sample_id in wanted)


def load_dataset(path: Path | str) -> Dataset:
    path = Path(path)
    try:
        payload = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        raw = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path} is not JSON: {exc}") from exc
    try:
        return parse_dataset(raw, source=str(path), sha256=hashlib.sha256(payload).hexdigest())
    except DatasetError as exc:
        raise DatasetError(f"{path}: {exc}") from exc  # the error names the file it is about


def parse_dataset(raw: Any, *, source: str = "<memory>", sha256: str = "") -> Dataset:
    if not isinstance(raw, list) or not raw:
        raise DatasetError("a LoCoMo file is a non-empty JSON list of samples")
    conversations = []
    seen: set[str] = set()
    for number, sample in enumerate(raw):
        conversation = _parse_sample(sample, number, DatasetIssues())
        if conversation.sample_id in seen:
            raise DatasetError(f"sample_id {conversation.sample_id!r} occurs twice")
        seen.add(conversation.sample_id)
        conversations.append(conversation)
    issues = DatasetIssues.merged(conversation.issues for conversation in conversations)
    return Dataset(source=source, sha256=sha256, conversations=tuple(conversations), issues=issues)


def _parse_sample(sample: Any, number: int, issues: DatasetIssues) -> Conversation:
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        raise DatasetError(f"sample {number} has no `conversation` object")
    sample_id = str(sample.get("sample_id") or f"sample-{number}")
    body: dict[str, Any] = sample["conversation"]
    unwritten: set[str] = set()
    sessions = _parse_sessions(sample_id, body, issues, unwritten)
    turns_by_id: dict[str, Turn] = {}
    for session in sessions:
        for turn in session.turns:
            if turn.dia_id in turns_by_id:
                issues.note("duplicate_dia_id", f"{sample_id} {turn.dia_id}")
                continue
            turns_by_id[turn.dia_id] = turn
    if not turns_by_id:
        # Nothing is written for it, so every question it has cites no written turn.
        issues.note("conversation_without_turns", sample_id)
    raw_qa = sample.get("qa", [])
    if not isinstance(raw_qa, list):
        raise DatasetError(f"{sample_id}: `qa` must be a list")
    if not raw_qa:
        issues.note("conversation_without_qa", sample_id)
    qa = tuple(
        item
        for index, entry in enumerate(raw_qa)
        if (item := _parse_qa(sample_id, index, entry, turns_by_id, unwritten, issues)) is not None
    )
    return Conversation(
        sample_id=sample_id,
        speaker_a=str(body.get("speaker_a", "")),
        speaker_b=str(body.get("speaker_b", "")),
        sessions=sessions,
        qa=qa,
        turns_by_id=turns_by_id,
        issues=issues,
    )


def _parse_sessions(
    sample_id: str, body: dict[str, Any], issues: DatasetIssues, unwritten: set[str]
) -> tuple[Session, ...]:
    session_keys = _keys_by_number(sample_id, body, _SESSION_KEY)
    date_keys = _keys_by_number(sample_id, body, _DATE_KEY)
    numbers = []
    for number, key in session_keys.items():
        if isinstance(body[key], list):
            numbers.append(number)
        else:
            issues.note("session_not_a_list", f"{sample_id} {key}={type(body[key]).__name__}")
    numbers.sort()
    if not numbers:
        raise DatasetError(f"{sample_id}: no `session_N` turn lists")
    for orphan in sorted(set(date_keys) - set(numbers)):
        issues.note("session_date_without_session", f"{sample_id} {date_keys[orphan]}")
    sessions = []
    for number in numbers:
        date_time = body.get(date_keys[number]) if number in date_keys else None
        if not date_time:
            issues.note("session_without_date", f"{sample_id} session_{number}")
        elif parse_session_date(str(date_time)) is None:
            # Written without `occurred_at`: say so, or the run silently loses the dates.
            issues.note("session_date_unparseable", f"{sample_id} session_{number} {date_time!r}")
        turns = []
        for position, raw in enumerate(body[session_keys[number]]):
            turn = _parse_turn(sample_id, number, position, raw, issues)
            if turn is not None:
                turns.append(turn)
            elif isinstance(raw, dict) and raw.get("dia_id"):
                unwritten.add(canonical_dia_id(str(raw["dia_id"])) or str(raw["dia_id"]))
        sessions.append(
            Session(
                number=number, date_time=str(date_time) if date_time else None, turns=tuple(turns)
            )
        )
    return tuple(sessions)


def _keys_by_number(
    sample_id: str, body: dict[str, Any], pattern: re.Pattern[str]
) -> dict[int, str]:
    """The keys of `body` matching `pattern`, by session number: `session_01` is session 1
    (its turns are `D1:n`). Two keys naming one number are ambiguous, so refused."""
    keys: dict[int, str] = {}
    for key in body:
        if match := pattern.fullmatch(key):
            number = int(match.group(1))
            if number in keys:
                raise DatasetError(f"{sample_id}: `{keys[number]}` and `{key}` name one session")
            keys[number] = key
    return keys


def _parse_turn(
    sample_id: str, session: int, position: int, raw: Any, issues: DatasetIssues
) -> Turn | None:
    where = f"{sample_id} session_{session}[{position}]"
    if not isinstance(raw, dict) or not raw.get("dia_id"):
        issues.note("turn_without_dia_id", where)
        return None
    text = str(raw.get("text") or "").strip()
    caption = str(raw.get("blip_caption") or "").strip() or None
    if not text and caption is None:
        issues.note("turn_without_text", f"{where} {raw['dia_id']}")
        return None
    speaker = str(raw.get("speaker") or "").strip()
    if not speaker:
        issues.note("turn_without_speaker", f"{where} {raw['dia_id']}")
    turn = Turn(
        dia_id=canonical_dia_id(str(raw["dia_id"])) or str(raw["dia_id"]),
        session=session,
        position=position,
        speaker=speaker or "unknown",
        text=text,
        caption=caption,
    )
    size = len(turn.line.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        # Written cut to the entry bound (ingest.py): an entry must be written for the turn.
        issues.note("turn_text_cut", f"{where} {turn.dia_id} ({size} bytes)")
    return turn


def _parse_qa(
    sample_id: str,
    index: int,
    raw: Any,
    turns_by_id: dict[str, Turn],
    unwritten: set[str],
    issues: DatasetIssues,
) -> QAItem | None:
    where = f"{sample_id} qa[{index}]"
    if not isinstance(raw, dict) or not str(raw.get("question") or "").strip():
        issues.note("qa_without_question", where)
        return None
    category = raw.get("category")
    if not isinstance(category, int) or category not in CATEGORY_NAMES:
        issues.note("qa_unknown_category", f"{where} category={category!r}")
        return None
    answer = _answer_text(raw.get("answer"), where, "answer", issues)
    adversarial = _answer_text(raw.get("adversarial_answer"), where, "adversarial_answer", issues)
    if answer is None:
        if category == 5:
            issues.note("adversarial_without_answer", where)
        else:
            issues.note("qa_without_answer", where)
    raw_evidence = raw.get("evidence") or []
    if not isinstance(raw_evidence, list):
        raw_evidence = [raw_evidence]
    evidence, unresolved = resolve_evidence(
        [str(item) for item in raw_evidence], set(turns_by_id), issues, where, unwritten
    )
    if not raw_evidence:
        issues.note("qa_without_evidence", where)
    elif unresolved:
        issues.note("qa_evidence_unresolved", f"{where} {' '.join(unresolved)}")
        evidence = ()
    elif not evidence:
        issues.note("qa_evidence_all_invalid", where)
    return QAItem(
        index=index,
        question=str(raw["question"]).strip(),
        category=category,
        answer=answer,
        adversarial_answer=adversarial,
        evidence=evidence,
        raw_evidence=tuple(str(item) for item in raw_evidence),
        unresolved_evidence=unresolved,
    )


def _answer_text(value: Any, where: str, key: str, issues: DatasetIssues) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str):
        # A few gold answers are JSON numbers (years, counts); they are scored as text.
        issues.note(f"non_string_{key}", f"{where} {value!r}")
        return str(value)
    return value.strip() or None
