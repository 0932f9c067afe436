"""Fused candidates as MemoryHits: each key resolved to the exact stored version it names, at
the search's one revision; a key whose version is gone (erased since) is left out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from powercontext.memory.models import ChannelScore, MemoryHit, MemoryRef
from powercontext.memory.ports import StoredVersion
from powercontext.memory.search.fusion import FusedCandidate


def hits_of(
    ref: MemoryRef,
    fused: Sequence[FusedCandidate],
    stored: Mapping[int, StoredVersion],
    explained: Mapping[int, tuple[ChannelScore, ...]],
) -> tuple[MemoryHit, ...]:
    return tuple(
        MemoryHit(
            memory_ref=ref,
            entry_id=row.entry_id,
            entry_version_id=row.entry_version_id,
            kind=row.kind,
            text=row.text,
            metadata=row.metadata,
            score=f.score,
            matched_by=f.matched_by,
            thread=row.thread,
            occurred_at=row.event_time,
            explain=explained.get(f.key, ()),
        )
        for f in fused
        if (row := stored.get(f.key)) is not None
    )
