"""One filter scan per search, shared by its channels.

A filtered search on the embedded store needs the keys of the versions that match the filter
at the search's revision: the in-memory BM25 channel and the vector channel both mask their
candidates with it. The scan reads every active row's metadata, so at 100k entries it costs
as much as the rest of the search; computing it once per (scope, revision, filter) and
letting the concurrent channels of a search (and the searches of a batch, which share one
revision) await the same scan halves that cost for a hybrid search.

Only scans in flight are shared: a finished one is dropped at once, so nothing outlives the
searches that asked for it (an erasure, say, is never masked by a stale key set).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import numpy as np
import numpy.typing as npt

from powercontext.memory.filters import MemoryFilter

Keys = npt.NDArray[np.int64]
ScanKey = tuple[str, int, str]


class SharedFilterScans:
    def __init__(self) -> None:
        self._running: dict[ScanKey, asyncio.Future[Keys | None]] = {}
        self.scans = 0
        """Scans started (not shared), for tests and diagnostics."""

    async def keys(
        self,
        scope_id: str,
        revision: int,
        where: MemoryFilter | None,
        scan: Callable[[], Awaitable[Keys | None]],
    ) -> Keys | None:
        """The matching keys, from the scan in flight for the same question if there is
        one, else from `scan()`; None without a filter (no scan at all)."""
        if where is None:
            return None
        key = (scope_id, revision, where.model_dump_json(exclude_none=True))
        running = self._running.get(key)
        if running is None:
            self.scans += 1
            running = asyncio.ensure_future(scan())
            self._running[key] = running
            running.add_done_callback(lambda _done: self._running.pop(key, None))
        # Shielded: one cancelled search must not cancel the scan another one awaits.
        return await asyncio.shield(running)
