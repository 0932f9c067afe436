"""Pending vectors filled in automatically: at startup, then in the background.

A write commits its text first and embeds afterwards (`indexing.py`), so a crash or a provider
failure between the two leaves active entries without a vector. Until they have one, `auto`
search serves fts and `vector`/`hybrid` answer 422 for that scope; before this module only a
manual `powercontext reindex` ended that. The filler runs a pass when the runtime opens and
then every `interval_seconds`:

- bounded: one scope at a time, one embedding batch (`embedding_batch_size`) at a time, the
  same work `reindex` does; a provider failure ends the pass and backs off exponentially;
- lock-free: it takes no scope write lock (vectors are upserts keyed by entry version), so
  writers never wait for it; a version embedded by its own write meanwhile is at worst
  embedded twice. A turn written meanwhile changes its neighbours' inputs: `reindex` reads
  the scope again when the head moved and re-embeds those (indexing.vectors);
- observable: `pending_total` (the last count) feeds /v1/ready and the
  `powercontext_memory_vectors_pending` gauge; `filling(service)` tells a search refused for
  missing vectors whether to say "retry shortly" or "run `powercontext reindex`".
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import TYPE_CHECKING

from powercontext.memory.errors import failure_summary

if TYPE_CHECKING:
    from powercontext.memory.service import MemoryService

log = logging.getLogger("powercontext.memory.backfill")

MAX_BACKOFF_SECONDS = 600.0
_FALLBACK_LOG_SECONDS = 60.0
_fallback_logged: dict[str, float] = {}
_running: weakref.WeakKeyDictionary[MemoryService, VectorBackfill] = weakref.WeakKeyDictionary()
"""The backfill started over a service (a runtime makes at most one), until it stops. Kept
here, not on MemoryService: the service knows nothing of the backfill built over it."""


def filling(service: MemoryService) -> bool:
    """Whether a background backfill runs over `service`: its searches' missing vectors of the
    current profile, in every scope, are filled without an operator. False while a `reindex`
    of the same runtime pauses it (that reindex fills them)."""
    return service in _running


def backfill_failure(service: MemoryService) -> str | None:
    """Why the backfill over `service` failed its last pass (None: it did not, or none runs):
    a refusal must not promise vectors that a broken model will never make."""
    backfill = _running.get(service)
    return backfill.failure if backfill is not None else None


def warn_auto_served_fts(scope_id: str, missing: int) -> None:
    """Say (at most once a minute per scope) that `auto` served fts because vectors are
    pending: otherwise a scope silently loses its vector channel."""
    now = time.monotonic()
    if now - _fallback_logged.get(scope_id, -_FALLBACK_LOG_SECONDS) < _FALLBACK_LOG_SECONDS:
        return
    if len(_fallback_logged) > 10_000:  # bounded memory under many scopes
        _fallback_logged.clear()
    _fallback_logged[scope_id] = now
    log.warning(
        "auto search served fts: %d active entries have no vector yet (the background "
        "backfill fills them; with it off, run `powercontext reindex`)",
        missing,
        extra={"scope_id": scope_id, "vectors_pending": missing},
    )


async def count_pending(service: MemoryService) -> dict[str, int]:
    """Scopes with active entries lacking a vector of the current profile, and how many."""
    if service.embedder is None:
        return {}
    counts: dict[str, int] = {}
    for scope_id in await service.store.scope_ids():
        missing = await service.pending_vectors(scope_id)
        if missing:
            counts[scope_id] = missing
    return counts


class VectorBackfill:
    def __init__(self, service: MemoryService, *, interval_seconds: float) -> None:
        if not interval_seconds > 0:
            raise ValueError("interval_seconds must be positive")
        self.service = service
        self.interval_seconds = interval_seconds
        self.pending: dict[str, int] = {}
        """The last count, per scope (only scopes with pending vectors)."""
        self.counted = False
        """Whether `pending` holds a count yet (before the first pass counts, it is empty)."""
        self.filled_total = 0
        self.passes = 0
        self.failure: str | None = None
        """The last pass's failure (errors.failure_summary) until a pass succeeds."""
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def pending_total(self) -> int:
        return sum(self.pending.values())

    async def fill_pass(self) -> int:
        """Count every scope, then fill those with pending vectors; returns how many filled.
        Provider and storage errors propagate (the loop backs off)."""
        self.pending = await count_pending(self.service)
        self.counted = True
        filled = 0
        for scope_id in sorted(self.pending):
            done = await self.service.reindex(scope_id)
            filled += done
            self.filled_total += done
            remaining = await self.service.pending_vectors(scope_id)
            if remaining:
                self.pending[scope_id] = remaining
            else:
                self.pending.pop(scope_id, None)
        self.passes += 1
        if filled:
            log.info(
                "vector backfill filled %d pending vectors (%d still pending)",
                filled,
                self.pending_total,
                extra={"vectors_filled": filled, "vectors_pending": self.pending_total},
            )
        return filled

    def start(self) -> None:
        """Run a pass now and then every interval, until `stop`."""
        if self._task is None:
            self._stopping = False  # `stop` waited for the previous task to end
            self._task = asyncio.create_task(self._run(), name="powercontext-vector-backfill")
            _running[self.service] = self

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        if _running.get(self.service) is self:
            del _running[self.service]
        self._stopping = True
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the caller is being cancelled too: not ours to swallow

    async def _run(self) -> None:
        delay = self.interval_seconds
        while not self._stopping:
            try:
                await self.fill_pass()
                self.failure = None
                delay = self.interval_seconds
            except Exception as exc:  # a provider or database outage: retry later, never die
                if self._stopping:
                    # The cancel arrived as an error: psycopg answers a cancelled query with
                    # QueryCanceled (a StorageError here), and the loop would sleep on.
                    return
                delay = min(max(delay * 2, self.interval_seconds), MAX_BACKOFF_SECONDS)
                self.failure = failure_summary(exc)
                log.warning(
                    "vector backfill failed (%s); %d vectors pending; next try in %.0f s",
                    self.failure,
                    self.pending_total,
                    delay,
                )
            await asyncio.sleep(delay)
