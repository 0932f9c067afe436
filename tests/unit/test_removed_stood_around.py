"""An inactive thread member is re-derived from the turns around it as the thread stood at its
last active revision: the same tokens and embedding inputs as deriving it within the whole
thread as it stood then (the reference below), over random retires and revises."""

from __future__ import annotations

import random

import pytest

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.indexing.removals import Derived, derive, derive_removed
from powercontext.memory.ports import CommitRequest, StoredVersion, VersionPage
from powercontext.memory.search.analyze import AnalyzerConfig
from powercontext.storage.sqlite import SqliteMemoryStore

from ..contract.builders import add, retire, revise


def _whole_thread(peers: list[StoredVersion], index: IndexTextConfig) -> Derived:
    analyzer = AnalyzerConfig()
    derived: Derived = {}
    for version in peers:
        if version.removed_revision is not None:
            at = version.removed_revision - 1
            stood = [peer for peer in peers if peer.active_at(at)]
            derived.update(derive(stood, {version.key}, index, analyzer))
    return derived


@pytest.mark.parametrize(("before", "after", "seed"), [(2, 2, 1), (1, 3, 2), (3, 0, 3), (2, 1, 4)])
async def test_around_equals_the_whole_thread(before: int, after: int, seed: int) -> None:
    rng = random.Random(seed)
    index = IndexTextConfig(context_before=before, context_after=after)
    async with await SqliteMemoryStore.open(":memory:") as store:
        head = None
        for turn in range(60):
            result = await store.commit(
                CommitRequest("s", head, [add(f"turn{turn} w{turn}", thread="t")])
            )
            head = result.revision
            if turn > 3 and rng.random() < 0.4:  # retire or revise an earlier active turn
                listed = await store.list_versions(
                    VersionPage("s", head, after_key=None, limit=1000)
                )
                firsts = [v for v in listed if v.thread == "t" and v.version == 1]
                victim = rng.choice(firsts)
                change = retire(victim) if rng.random() < 0.5 else revise(victim, "changed")
                head = (await store.commit(CommitRequest("s", head, [change]))).revision
        removed = await store.removed_versions("s", threads=["t"], batches=())
        listed = await store.list_versions(VersionPage("s", head, after_key=None, limit=1000))
        peers = sorted(
            [*removed, *(v for v in listed if v.thread == "t" and v.version == 1)],
            key=lambda v: v.key,
        )
    assert len(removed) >= 8
    assert derive_removed(peers, index, AnalyzerConfig()) == _whole_thread(peers, index)
