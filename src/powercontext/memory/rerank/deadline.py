"""The search's deadline, as the rerank stage sees it.

A search with a deadline (`SearchConfig.timeout_seconds`) publishes the loop time at which it
must answer; the rerank guard ends the rerank stage `FALLBACK_RESERVE_SECONDS` before it, so a
fail-open search still has time to resolve and serve the coarse page. A context variable
carries it because the reranker port (`rerank(query, candidates, limit)`) is the RFC's and
takes no deadline; concurrent searches each see their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Resolving ranks, writing the trace and sending the page take well under a millisecond on
# SQLite; 50 ms leaves room for a loaded machine and the HTTP response.
FALLBACK_RESERVE_SECONDS = 0.05

_search_deadline: ContextVar[float | None] = ContextVar(
    "powercontext_search_deadline", default=None
)


@contextmanager
def search_deadline(at: float | None) -> Iterator[None]:
    """Within the block, the rerank stage must end by `at` (loop time) minus the reserve."""
    token = _search_deadline.set(at)
    try:
        yield
    finally:
        _search_deadline.reset(token)


def rerank_deadline(own_timeout_seconds: float | None) -> tuple[float | None, str]:
    """The loop time the rerank stage must end by, and which limit set it (for the error)."""
    now = asyncio.get_running_loop().time()
    ends: list[tuple[float, str]] = []
    if own_timeout_seconds is not None:
        ends.append((now + own_timeout_seconds, f"its deadline of {own_timeout_seconds:g}s"))
    search_end = _search_deadline.get()
    if search_end is not None:
        ends.append((search_end - FALLBACK_RESERVE_SECONDS, "the search deadline"))
    if not ends:
        return None, ""
    return min(ends)
