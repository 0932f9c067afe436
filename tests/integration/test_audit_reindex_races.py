"""Writes arriving while `reindex --rebuild`, `reindex` or the backfill runs: a new turn widens
the neighbourhood of the turns before it, so an index derived from a listing taken before the
turn arrived must not be the last word on those neighbours. After both finish, the scope
searches exactly like a fresh write of the final data.

The writes are made to land at the worst moment: between the rebuild's listing and its first
store write, by wrapping that store method (another runtime on the same database stands for
another process; its scope lock is its own)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from powercontext import Runtime, open_runtime
from powercontext.memory import RememberMemoryRequest
from tests.integration.test_audit_reindex_profile import (
    OLD,
    ranked,
    settings,
    turns,
    url,
    write_one_by_one,
)

__all__ = ["url"]  # the fixture, shared
LATE = 12
"""Turns written while the index is being derived (two per thread, on average)."""


def _before_first(
    runtime: Runtime, method: str, writes: Callable[[], Awaitable[None]]
) -> Callable[[], None]:
    """Run `writes` just before the first call of the store's `method`; returns the undo."""
    store = runtime.store
    original = getattr(store, method)
    fired = False

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        nonlocal fired
        if not fired:
            fired = True
            await writes()
        return await original(*args, **kwargs)

    setattr(store, method, wrapped)
    return lambda: setattr(store, method, original)


def _late_writer(runtime: Runtime, late: list[RememberMemoryRequest]) -> Callable[[], Any]:
    return lambda: write_one_by_one(runtime.memory.for_scope("chat"), late)


async def _same_as_fresh(url: str, written: list[RememberMemoryRequest]) -> None:
    async with open_runtime(settings(url)) as rt:
        assert await rt.memory.profiles.stale_scopes() == []
        assert await rt.memory.for_scope("chat").pending_vectors() == 0
        fresh = rt.memory.for_scope("fresh")
        await write_one_by_one(fresh, written)
        assert await ranked(rt.memory.for_scope("chat")) == await ranked(fresh)


@pytest.mark.parametrize("moment", ["rewrite_index_tokens", "put_vectors"])
async def test_turns_written_during_a_rebuild_keep_their_neighbours(url: str, moment: str) -> None:
    written = turns(240)
    async with open_runtime(settings(url, **OLD)) as rt:
        await write_one_by_one(rt.memory.for_scope("chat"), written[:-LATE])
    async with open_runtime(settings(url)) as rebuilder, open_runtime(settings(url)) as writer:
        undo = _before_first(rebuilder, moment, _late_writer(writer, written[-LATE:]))
        counts = await rebuilder.reindex(rebuild=True)
        undo()
        assert counts == {"chat": len(written) - LATE}
    await _same_as_fresh(url, written)


async def test_turns_written_during_a_reindex_keep_their_neighbours(url: str) -> None:
    written = turns(240)
    async with open_runtime(settings(url, "none")) as rt:
        await write_one_by_one(rt.memory.for_scope("chat"), written[:-LATE])
    async with open_runtime(settings(url)) as filler, open_runtime(settings(url)) as writer:
        undo = _before_first(filler, "put_vectors", _late_writer(writer, written[-LATE:]))
        await filler.reindex()
        undo()
    await _same_as_fresh(url, written)


async def test_turns_written_in_process_during_a_backfill_pass_keep_their_neighbours(
    url: str,
) -> None:
    """The backfill takes no scope lock: the server's own writes interleave with it."""
    written = turns(240)
    async with open_runtime(settings(url, "none")) as rt:
        await write_one_by_one(rt.memory.for_scope("chat"), written[:-LATE])
    async with open_runtime(settings(url, vector_backfill_interval_seconds=3600)) as rt:
        assert rt.backfill is not None
        await rt.backfill.stop()
        undo = _before_first(rt, "put_vectors", _late_writer(rt, written[-LATE:]))
        await rt.backfill.fill_pass()
        undo()
    await _same_as_fresh(url, written)
