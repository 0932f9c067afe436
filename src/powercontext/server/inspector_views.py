"""What the memory inspector's JSON routes (/ui/api) answer: richer views than HTTP v1.

Searches made from the page answer with the full rerank trace (the coarse pool, the
selected and discarded ranks, fallback, latency and usage), which HTTP v1 never returns; the
trace holds candidate text, so it gets the same auth as search output. The views take the
same `Call` and wire requests as the handlers, so the search is built by `translate` too.
"""

from __future__ import annotations

import time
from typing import Any

from powercontext.memory.history import entry_history
from powercontext.memory.models import MemoryEntry, MemoryHit, MemoryRef, MemoryRerankTrace
from powercontext.server import translate
from powercontext.server.calls import Call
from powercontext.server.history import HistoryRequest
from powercontext.server.schemas import ListEntriesRequest
from powercontext.server.scopes import ListScopesRequest
from powercontext.server.search_schemas import SearchRequest

View = dict[str, Any]


def _ref(ref: MemoryRef | None) -> dict[str, Any] | None:
    return ref.model_dump(mode="json") if ref is not None else None


def _hit(hit: MemoryHit) -> dict[str, Any]:
    return {
        "entry_id": hit.entry_id,
        "entry_version_id": hit.entry_version_id,
        "kind": hit.kind,
        "text": hit.text,
        "metadata": hit.metadata,
        "score": hit.score,
        "matched_by": list(hit.matched_by),
    }


def _trace(trace: MemoryRerankTrace) -> dict[str, Any]:
    # Every scalar field of the trace passes through, so fields added later show up as-is.
    summary = trace.model_dump(mode="json", exclude={"candidate_hits"})
    position = {rank: index for index, rank in enumerate(trace.selected_ranks, start=1)}
    truncated = set(trace.truncated_ranks)
    summary["candidates"] = [
        _hit(hit)
        | {"rank": rank, "final_position": position.get(rank), "truncated": rank in truncated}
        for rank, hit in enumerate(trace.candidate_hits, start=1)
    ]
    return summary


def _final_hits(hits: tuple[MemoryHit, ...], trace: MemoryRerankTrace | None) -> list[Any]:
    pool_rank: dict[str, int] = {}
    if trace is not None:
        pool_rank = {h.entry_version_id: r for r, h in enumerate(trace.candidate_hits, start=1)}
    return [
        _hit(hit) | {"position": position, "rank": pool_rank.get(hit.entry_version_id, position)}
        for position, hit in enumerate(hits, start=1)
    ]


def _entry(entry: MemoryEntry) -> dict[str, Any]:
    return entry.model_dump(mode="json", exclude={"citation"}) | {
        "citation": entry.citation.model_dump(mode="json")
    }


async def scopes(call: Call, body: ListScopesRequest) -> View:
    visible = [scope for scope in await call.runtime.store.scope_ids() if call.grant.allows(scope)]
    return {"scopes": sorted(visible)}


async def search(call: Call, body: SearchRequest) -> View:
    memory = call.memory(body.scope_id)
    started = time.perf_counter()
    page = await memory.search(translate.search_request(body))
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    reranker = call.runtime.memory_reranker
    return {
        "memory_ref": _ref(page.memory_ref),
        "mode": page.mode,
        "limit": body.limit,
        "elapsed_ms": round(elapsed_ms, 3),
        "reranker": reranker.policy_id if reranker is not None else None,
        "hits": _final_hits(page.hits, page.rerank),
        "rerank": _trace(page.rerank) if page.rerank is not None else None,
        "index_profile_stale": await call.runtime.memory.profiles.is_stale(body.scope_id),
    }


async def entries(call: Call, body: ListEntriesRequest) -> View:
    memory = call.memory(body.scope_id)
    page = await memory.list(
        revision=body.revision, cursor=body.cursor, limit=body.limit, where=body.filter
    )
    return {
        "memory_ref": _ref(page.memory_ref),
        "entries": [_entry(entry) for entry in page.entries],
        "next_cursor": page.next_cursor,
    }


async def history(call: Call, body: HistoryRequest) -> View:
    """Every version of one entry, oldest first, with the change that wrote or retired it."""
    found = await entry_history(call.memory(body.scope_id), body.entry_id, body.revision)
    return {
        "memory_ref": _ref(found.memory_ref),
        "entry_id": found.entry_id,
        "changes": [change.model_dump(mode="json") for change in found.changes],
        "versions": [
            _entry(record.entry) | {"written_by": record.written_by.model_dump(mode="json")}
            for record in found.versions
        ],
        "complete": found.complete,
    }
