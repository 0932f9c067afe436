"""Committing a planned write: the scope lock, the compare-and-swap, its retries, and the
idempotency record checked before each attempt."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable

from powercontext.memory.errors import PayloadTooLargeError, RevisionConflictError
from powercontext.memory.idempotency import check_body
from powercontext.memory.ports import (
    CommitRequest,
    IdempotencyClaim,
    IdempotentWrite,
    MemoryStore,
    NewVersion,
    PlannedChange,
)

Planner = Callable[[], Awaitable[list[PlannedChange]]]
COMMIT_RETRY_SECONDS = 30.0
"""How long a write without expected_revision keeps retrying a lost CAS (another process
committed first). A count would not do: with N writers sharing a database, losing 5 rounds in a
row is routine, and the caller asked for 'whatever the head is', which always exists."""
_BACKOFF_SECONDS = (0.001, 0.05)


def check_batch_size(count: int, bound: int) -> None:
    """One revision holds at most `bound` new entries (remember_many, add_entries)."""
    if count > bound:
        raise PayloadTooLargeError(
            f"batch of {count} entries exceeds the bound of {bound} "
            "(POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_ENTRIES)"
        )


async def commit_planned(
    store: MemoryStore,
    lock: asyncio.Lock,
    scope_id: str,
    expected_revision: int | None,
    plan: Planner,
    claim: IdempotencyClaim | None,
) -> tuple[int, list[NewVersion], list[int]] | IdempotentWrite:
    """Plan and commit under the scope lock; retry a lost CAS only when no revision was
    expected (the caller asked for 'whatever the head is'). A write whose idempotency key
    is recorded already returns that record instead (checked before each attempt)."""
    async with lock:
        give_up = time.monotonic() + COMMIT_RETRY_SECONDS
        attempts = 0
        while True:
            attempts += 1
            if claim is not None:
                recorded = await store.idempotent_write(scope_id, claim.key)
                if recorded is not None:
                    check_body(claim, recorded)
                    return recorded
            head = await store.head(scope_id)
            if expected_revision is not None and expected_revision != (head or 0):
                raise RevisionConflictError(
                    f"scope {scope_id!r} is at revision {head or 0}, expected {expected_revision}",
                    expected=expected_revision,
                    actual=head or 0,
                )
            changes = await plan()
            try:
                request = CommitRequest(scope_id, head, changes, idempotency=claim)
                result = await store.commit(request)
            except RevisionConflictError:
                if claim is not None and (
                    recorded := await store.idempotent_write(scope_id, claim.key)
                ):
                    check_body(claim, recorded)  # another process committed this key
                    return recorded
                if expected_revision is not None:
                    raise
                if time.monotonic() >= give_up:
                    raise RevisionConflictError(
                        f"scope {scope_id!r} kept changing; gave up after {attempts} "
                        f"attempts in {COMMIT_RETRY_SECONDS:g} s",
                        expected=None,
                        actual=None,
                    ) from None
                # Jittered and growing: writers in other processes that lost the same
                # round must not collide again in lockstep.
                low, high = _BACKOFF_SECONDS
                await asyncio.sleep(random.uniform(low, min(high, low * 2**attempts)))
                continue
            news = [c.new for c in changes if c.new is not None]
            return result.revision, news, list(result.keys)
