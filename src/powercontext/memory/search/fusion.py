"""Stage 4: Reciprocal Rank Fusion of the admitted channel lists into the coarse pool."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from powercontext.memory.models import ChannelScore
from powercontext.memory.values import Channel

DEFAULT_RRF_K = 60
CHANNEL_ORDER: tuple[Channel, ...] = ("fts", "vector")


@dataclass(frozen=True, slots=True)
class RrfConfig:
    """The fuse stage's parameters: score(d) = sum over channels of weight / (k + rank)."""

    k: int = DEFAULT_RRF_K
    weight_fts: float = 1.0
    weight_vector: float = 1.0

    @property
    def weights(self) -> dict[Channel, float]:
        return {"fts": self.weight_fts, "vector": self.weight_vector}


@dataclass(frozen=True, slots=True)
class FusedCandidate:
    key: int
    score: float
    matched_by: tuple[Channel, ...]


def fuse_rrf(
    channels: Mapping[Channel, Sequence[int]],
    *,
    limit: int,
    k: int = DEFAULT_RRF_K,
    weights: Mapping[Channel, float] | None = None,
) -> list[FusedCandidate]:
    """score(d) = sum over channels of weight / (k + rank); ties break on the smaller key.

    A key listed twice in one channel counts at its best rank only.
    """
    present = [channel for channel in CHANNEL_ORDER if channels.get(channel)]
    if len(present) == 1 and limit > 0:
        (channel,) = present
        weight = 1.0 if weights is None else weights.get(channel, 1.0)
        if weight > 0 and (alone := _one_channel(channels[channel], channel, weight, k, limit)):
            return alone
    scores: dict[int, float] = {}
    matched: dict[int, list[Channel]] = {}
    for channel in CHANNEL_ORDER:
        keys = channels.get(channel)
        if not keys:
            continue
        weight = 1.0 if weights is None else weights.get(channel, 1.0)
        seen: set[int] = set()
        for rank, key in enumerate(keys, start=1):
            if key in seen:
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            matched.setdefault(key, []).append(channel)
    # Best first, ties by the smaller key: a stable sort by score of the keys in key order.
    ordered = sorted(sorted(scores), key=scores.__getitem__, reverse=True)[:limit]
    return [FusedCandidate(key, scores[key], tuple(matched[key])) for key in ordered]


def _one_channel(
    keys: Sequence[int], channel: Channel, weight: float, k: int, limit: int
) -> list[FusedCandidate] | None:
    """`fuse_rrf` of one channel weighted above 0: its scores fall with the rank, so its own
    order is the fused one (no tie to break, no sort; an fts-only search fuses this way).
    None when two ranks' scores round to one float (a weight near 0): ties go by key."""
    fused: list[FusedCandidate] = []
    seen: set[int] = set()
    for rank, key in enumerate(keys, start=1):
        if key in seen:
            continue
        seen.add(key)
        score = weight / (k + rank)
        if fused and score >= fused[-1].score:
            return None
        fused.append(FusedCandidate(key, score, (channel,)))
        if len(fused) == limit:
            break
    return fused


def channel_scores(
    admitted: Mapping[Channel, Sequence[int]],
    raw: Mapping[Channel, Mapping[int, float]],
    keys: Collection[int] | None = None,
) -> dict[int, tuple[ChannelScore, ...]]:
    """Each admitted key's rank (as fuse_rrf counts it: best rank, from 1) and raw score per
    channel, in channel order: what a caller needs to judge a hit and set a floor.

    `keys`: only these keys are explained (the pool the page is cut from); ranks still count
    every admitted key."""
    wanted = None if keys is None else frozenset(keys)
    found: dict[int, list[ChannelScore]] = {}
    for channel in CHANNEL_ORDER:
        scores = raw.get(channel, {})
        seen: set[int] = set()
        for rank, key in enumerate(admitted.get(channel, ()), start=1):
            if key in seen:
                continue
            seen.add(key)
            if wanted is not None and key not in wanted:
                continue
            explained = ChannelScore(channel=channel, rank=rank, score=scores.get(key, 0.0))
            found.setdefault(key, []).append(explained)
    return {key: tuple(items) for key, items in found.items()}
