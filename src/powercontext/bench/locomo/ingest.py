"""Turn a conversation into Memory entries: one scope per conversation.

Each entry carries what an agent would know when writing it: `thread` (the conversation's
session for a turn, the conversation for a session entry), `occurred_at` (the session's
date) and, for a turn, the speaker in metadata (`speaker`).

`turn` granularity writes one entry per dialogue turn; `session` one entry per session (split
into consecutive chunks only when a session exceeds the entry size bound). Every entry's
metadata names the dia ids it holds, which is how hits are matched to evidence.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from powercontext.bench.locomo.dataset import Conversation, Session, Turn
from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.values import MAX_TEXT_BYTES

Granularity = Literal["turn", "session"]


@dataclass(frozen=True, slots=True)
class IngestPlan:
    scope_id: str
    requests: tuple[RememberMemoryRequest, ...]
    session_chunks: int = 0
    """Sessions that had to be split because they exceed the entry text bound."""


def session_thread(conversation: Conversation, session: Session) -> str:
    return f"{conversation.sample_id}/session-{session.number}"


def turn_request(conversation: Conversation, session: Session, turn: Turn) -> RememberMemoryRequest:
    return RememberMemoryRequest(
        kind="turn",
        # A turn longer than the bound is cut (counted as `turn_text_cut` when loading).
        text=_cut_to_bytes(turn.line, MAX_TEXT_BYTES),
        thread=session_thread(conversation, session),
        occurred_at=session.occurred_at,
        metadata={
            "sample_id": conversation.sample_id,
            "dia_id": turn.dia_id,
            "session": session.number,
            "session_date": session.date_time,
            "speaker": turn.speaker,
        },
    )


def _session_chunks(session: Session, budget: int) -> Iterator[list[Turn]]:
    chunk: list[Turn] = []
    size = 0
    for turn in session.turns:
        line = len(turn.line.encode("utf-8")) + 1
        if chunk and size + line > budget:
            yield chunk
            chunk, size = [], 0
        chunk.append(turn)
        size += line
    if chunk:
        yield chunk


def session_requests(
    conversation: Conversation, session: Session, budget: int = MAX_TEXT_BYTES
) -> list[RememberMemoryRequest]:
    requests = []
    chunks = list(_session_chunks(session, budget))
    for part, turns in enumerate(chunks, start=1):
        metadata: dict[str, Any] = {
            "sample_id": conversation.sample_id,
            "session": session.number,
            "session_date": session.date_time,
            "dia_ids": [turn.dia_id for turn in turns],
        }
        if len(chunks) > 1:
            metadata["part"] = part
        requests.append(
            RememberMemoryRequest(
                kind="session",
                # A single turn longer than the bound is cut: the entry must still be written.
                text=_cut_to_bytes("\n".join(turn.line for turn in turns), budget),
                metadata=metadata,
                thread=conversation.sample_id,
                occurred_at=session.occurred_at,
            )
        )
    return requests


def _cut_to_bytes(text: str, budget: int) -> str:
    return text.encode("utf-8")[:budget].decode("utf-8", "ignore")


def plan_ingest(
    conversation: Conversation, granularity: Granularity, prefix: str = "locomo"
) -> IngestPlan:
    requests: list[RememberMemoryRequest] = []
    split = 0
    for session in conversation.sessions:
        if granularity == "turn":
            requests.extend(turn_request(conversation, session, turn) for turn in session.turns)
        else:
            parts = session_requests(conversation, session)
            split += len(parts) > 1
            requests.extend(parts)
    return IngestPlan(
        scope_id=scope_id_for(prefix, conversation.sample_id, granularity, requests),
        requests=tuple(requests),
        session_chunks=split,
    )


def scope_id_for(
    prefix: str, sample_id: str, granularity: str, requests: Sequence[RememberMemoryRequest]
) -> str:
    """The scope names its exact content, so a resumed run or a shared server reuses a scope
    only when it holds precisely these entries."""
    digest = hashlib.sha256()
    for request in requests:
        when = request.occurred_at.isoformat() if request.occurred_at else None
        digest.update(
            json.dumps(
                [request.kind, request.text, request.metadata, request.thread, when],
                sort_keys=True,
                ensure_ascii=False,
            ).encode("utf-8")
        )
    return f"{prefix}-{sample_id}-{granularity}-{digest.hexdigest()[:12]}"


def covered_dia_ids(metadata: dict[str, Any]) -> frozenset[str]:
    """The evidence ids one hit covers: its turn, or every turn of its session entry."""
    ids = metadata.get("dia_ids")
    if isinstance(ids, list):
        return frozenset(str(item) for item in ids)
    dia_id = metadata.get("dia_id")
    return frozenset((str(dia_id),)) if dia_id else frozenset()
