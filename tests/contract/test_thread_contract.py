"""Contract: threads, event times, rewritten tokens and index profiles (issue 17)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from powercontext.memory.errors import NotFoundError
from powercontext.memory.ports import CommitRequest, FtsQuery, MemoryStore, VersionPage
from powercontext.memory.search.fields import FieldWeights

from .builders import add, retire, revise

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


async def test_thread_and_event_time_round_trip(store: MemoryStore) -> None:
    result = await store.commit(
        CommitRequest(
            "s", None, [add("with both", thread="chat", occurred_at=WHEN), add("with neither")]
        )
    )
    rows = await store.fetch_versions("s", result.keys)
    first, second = rows[result.keys[0]], rows[result.keys[1]]
    assert (first.thread, first.occurred_at) == ("chat", WHEN)
    assert first.event_time == WHEN
    assert (second.thread, second.occurred_at) == (None, None)
    assert second.event_time == second.created_at
    (listed, _) = await store.list_versions(VersionPage("s", 1, after_key=None, limit=10))
    assert listed.occurred_at == WHEN


async def test_thread_tail_is_the_last_active_first_versions_in_write_order(
    store: MemoryStore,
) -> None:
    one = await store.commit(CommitRequest("s", None, [add(f"a{i}", thread="t") for i in range(3)]))
    two = await store.commit(
        CommitRequest("s", 1, [add("other", thread="u"), add("a3", thread="t")])
    )
    rows = await store.fetch_versions("s", [*one.keys, *two.keys])
    await store.commit(
        CommitRequest("s", 2, [retire(rows[one.keys[1]]), revise(rows[one.keys[2]], "a2 new")])
    )
    tail = await store.thread_tail("s", "t", limit=5)
    # the retired a1 and the revised a2 (version 2) are nobody's neighbours
    assert [v.text for v in tail] == ["a0", "a3"]
    assert [v.text for v in await store.thread_tail("s", "t", limit=1)] == ["a3"]
    assert await store.thread_tail("s", "nope", limit=3) == []
    assert await store.thread_tail("other-scope", "t", limit=3) == []


async def test_thread_tail_before_a_key_is_the_active_turns_before_it(store: MemoryStore) -> None:
    written = await store.commit(
        CommitRequest("s", None, [add(f"t{i}", thread="t") for i in range(6)])
    )
    keys = written.keys
    rows = await store.fetch_versions("s", keys)
    await store.commit(CommitRequest("s", 1, [retire(rows[keys[2]])]))
    # the turns before t4, nearest last, the retired t2 left out
    before = await store.thread_tail("s", "t", limit=2, before_key=keys[4])
    assert [v.text for v in before] == ["t1", "t3"]
    assert [v.text for v in await store.thread_tail("s", "t", limit=9, before_key=keys[4])] == [
        "t0",
        "t1",
        "t3",
    ]
    assert await store.thread_tail("s", "t", limit=3, before_key=keys[0]) == []
    assert [v.text for v in await store.thread_tail("s", "t", limit=1, before_key=keys[2])] == [
        "t1"
    ]


async def test_rewritten_tokens_are_searched_without_a_new_revision(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add("canoe trip"), add("lake")]))
    assert [c.key for c in await store.fts_candidates(FtsQuery("s", 1, ["freez"], limit=5))] == []
    await store.rewrite_index_tokens("s", [(result.keys[0], "canoe trip freez")])
    found = await store.fts_candidates(FtsQuery("s", 1, ["freez"], limit=5))
    assert [c.key for c in found] == [result.keys[0]]
    assert "freez" in found[0].tokens
    assert await store.head("s") == 1
    # a second rewrite replaces, it does not add
    await store.rewrite_index_tokens("s", [(result.keys[0], "canoe")])
    assert await store.fts_candidates(FtsQuery("s", 1, ["freez"], limit=5)) == []
    assert [c.key for c in await store.fts_candidates(FtsQuery("s", 1, ["canoe"], limit=5))] == [
        result.keys[0]
    ]
    with pytest.raises(NotFoundError):
        await store.rewrite_index_tokens("s", [(result.keys[-1] + 1000, "x")])


async def test_a_candidates_tokens_follow_a_rewrite_after_a_search_read_them(
    store: MemoryStore,
) -> None:
    result = await store.commit(
        CommitRequest("s", None, [add("canoe trip", tokens="canoe trip"), add("lake")])
    )
    (before,) = await store.fts_candidates(FtsQuery("s", 1, ["canoe"], limit=5))
    assert "canoe" in before.tokens and "freez" not in before.tokens
    await store.rewrite_index_tokens("s", [(result.keys[0], "canoe trip freez")])
    (after,) = await store.fts_candidates(FtsQuery("s", 1, ["canoe"], limit=5))
    assert "freez" in after.tokens


async def test_index_profiles_are_recorded_per_scope(store: MemoryStore) -> None:
    assert await store.index_profile("s") is None
    await store.commit(CommitRequest("s", None, [add("x")]))
    await store.set_index_profile("s", '{"a":1}')
    await store.set_index_profile("s", '{"a":2}')
    await store.set_index_profile("t", '{"b":1}')
    assert await store.index_profile("s") == '{"a":2}'
    assert await store.index_profiles() == {"s": '{"a":2}', "t": '{"b":1}'}


async def test_own_words_outrank_a_neighbours_and_the_speaker_field_counts(
    store: MemoryStore,
) -> None:
    # Same lengths, so only the field of the matched word differs.
    result = await store.commit(
        CommitRequest(
            "s",
            None,
            [
                add("x", tokens="lake trip _canoe _day"),
                add("x", tokens="canoe trip _lake _day"),
                add("x", tokens="lake trip _day _sun @carolin"),
                add("x", tokens="lake trip _day _sun @melani"),
            ],
        )
    )
    first, second, third, fourth = result.keys
    found = await store.fts_candidates(FtsQuery("s", 1, ["canoe"], limit=5))
    assert [c.key for c in found] == [second, first]
    assert found[1].score < found[0].score
    none = await store.fts_candidates(
        FtsQuery("s", 1, ["canoe"], limit=5, fields=FieldWeights(context=0))
    )
    assert [c.key for c in none] == [second]
    named = await store.fts_candidates(FtsQuery("s", 1, ["carolin", "sun"], limit=5))
    assert [c.key for c in named][:2] == [third, fourth]
