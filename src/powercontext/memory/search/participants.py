"""Stage 4b: a query that names a participant favours that participant's entries.

A participant is named when a query term is a word of some candidate's speaker field (the
full-text channel returns each candidate's tokens, speaker words marked `@word`; see
search.fields). The fused score of every candidate whose speaker is named is then multiplied
by 1 + boost, before the pool is cut, so the channels' own orders still decide among a
participant's entries. When no participant is named (no speaker metadata, or a query without
a name), nothing changes and nothing more is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from powercontext.memory.ports import FtsCandidate
from powercontext.memory.search.fields import SPEAKER_PREFIX
from powercontext.memory.search.fusion import FusedCandidate


def named_participants(terms: Sequence[str], candidates: Sequence[FtsCandidate]) -> frozenset[str]:
    """Query terms that are a word of some full-text candidate's speaker field."""
    wanted = {SPEAKER_PREFIX + term: term for term in terms}
    named: set[str] = set()
    for candidate in candidates:
        if not candidate.tokens.isdisjoint(wanted):  # the usual case: no name at all
            named.update(wanted[token] for token in candidate.tokens & wanted.keys())
    return frozenset(named)


def favour_participants(
    fused: Sequence[FusedCandidate],
    speakers: Mapping[int, frozenset[str]],
    named: frozenset[str],
    boost: float,
    limit: int,
) -> list[FusedCandidate]:
    """The fused list with named participants' entries boosted, best first, cut to `limit`."""
    rescored = [
        FusedCandidate(c.key, c.score * (1.0 + boost), c.matched_by)
        if speakers.get(c.key, frozenset()) & named
        else c
        for c in fused
    ]
    rescored.sort(key=lambda c: (-c.score, c.key))
    return rescored[:limit]
