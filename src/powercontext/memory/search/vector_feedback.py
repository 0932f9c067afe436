"""Query expansion in the vector channel, from the full-text channel's best match.

A question is short and phrased unlike the turns that answer it; the entry the full-text
channel ranks first is written in the conversation's own words. The vector channel is asked
a second time with the question followed by that entry's text, and the second ranking is
merged into the first at a lower weight (the same reciprocal-rank merge as full-text
feedback), so entries that paraphrase the matched one, not the question, can reach the pool.
Pure: the caller supplies the text lookup and the vector channel as functions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from powercontext.memory.ports import VectorCandidate
from powercontext.memory.search.admission import admit
from powercontext.memory.search.feedback import merge_rankings

log = logging.getLogger("powercontext.memory.search")


@dataclass(frozen=True, slots=True)
class VectorFeedbackConfig:
    docs: int = 0
    """The first admitted full-text entries whose text joins the question; 0: off."""
    weight: float = 0.5
    """The second vector ranking's weight against the question's own (1.0)."""
    max_chars: int = 512
    """At most this many characters of each entry's text join the question."""

    @property
    def enabled(self) -> bool:
        return self.docs > 0 and self.weight > 0


def expanded_query(query: str, texts: Sequence[str], max_chars: int) -> str:
    return "\n".join([query, *(text[:max_chars] for text in texts)])


async def with_vector_feedback(
    query: str,
    fts_admitted: Sequence[int],
    vector_admitted: list[int],
    texts: Callable[[list[int]], Awaitable[list[str]]],
    channel: Callable[[str], Awaitable[list[VectorCandidate]]],
    config: VectorFeedbackConfig,
    *,
    floor: float,
    k: int,
) -> list[int]:
    """The admitted vector ranking with the expanded query's merged in; unchanged when off
    or when the full-text channel admitted nothing."""
    if not config.enabled or not fts_admitted:
        return vector_admitted
    found = await texts(list(fts_admitted[: config.docs]))
    if not found:
        return vector_admitted
    try:
        second = await channel(expanded_query(query, found, config.max_chars))
    except Exception as exc:  # the expansion is an extra: its failure must not fail the search
        log.warning("vector query expansion skipped: %s", type(exc).__name__)
        return vector_admitted
    again = admit((), second, (), min_similarity=floor).keys["vector"]
    return merge_rankings(vector_admitted, again, weight=config.weight, k=k)
