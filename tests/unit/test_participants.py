"""A query naming a participant favours that participant's entries (search.participants)."""

from __future__ import annotations

from powercontext.memory.ports import FtsCandidate
from powercontext.memory.search.fusion import FusedCandidate
from powercontext.memory.search.participants import favour_participants, named_participants


def _fts(key: int, *tokens: str) -> FtsCandidate:
    return FtsCandidate(key=key, score=1.0, tokens=frozenset(tokens))


def test_a_participant_is_named_by_a_query_term_in_a_speaker_field() -> None:
    found = [_fts(1, "hike", "@carolin"), _fts(2, "carolin", "@melani")]
    assert named_participants(["carolin", "hike"], found) == {"carolin"}
    assert named_participants(["hike"], found) == frozenset()


def test_named_entries_are_boosted_before_the_cut() -> None:
    fused = [
        FusedCandidate(key, 1.0 / (20 + rank), ("vector",)) for rank, key in enumerate((5, 6, 7), 1)
    ]
    speakers = {5: frozenset({"melani"}), 6: frozenset({"carolin"}), 7: frozenset({"carolin"})}
    kept = favour_participants(fused, speakers, frozenset({"carolin"}), 0.5, limit=2)
    assert [c.key for c in kept] == [6, 7]
    assert kept[0].score == 1.5 / 22
    untouched = favour_participants(fused, speakers, frozenset({"nobody"}), 0.5, limit=3)
    assert untouched == fused
