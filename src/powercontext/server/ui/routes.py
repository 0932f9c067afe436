"""The memory inspector: the page at /ui and the JSON routes it calls under /ui/api.

The page and its static files hold no data and are served without a key. Every /ui/api route
authenticates the bearer key and checks the scope exactly like HTTP v1. Searches made from
the page run in-process and answer with the rerank trace (the coarse pool, the selected and
discarded ranks, fallback, latency and usage), which HTTP v1 never returns; the trace holds
candidate text, so it gets the same auth as search output. Nothing here is part of the v1
contract: every route is left out of the OpenAPI schema.
"""

from __future__ import annotations

import json
import time
from importlib.resources import files
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from powercontext.memory.errors import NotFoundError
from powercontext.memory.history import entry_history
from powercontext.memory.models import (
    MemoryEntry,
    MemoryHit,
    MemoryRef,
    MemoryRerankTrace,
    SearchMemoryRequest,
)
from powercontext.server.history import HistoryRequest
from powercontext.server.routes import Caller, scoped_memory, state_of
from powercontext.server.schemas import ListEntriesRequest, SearchRequest

UI_PATH = "/ui"
STATIC_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}

# The page loads only its own script and stylesheet; even a missed escape could not run code.
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _asset(name: str) -> bytes:
    return files("powercontext.server.ui").joinpath("static", name).read_bytes()


def _json(payload: Any) -> Response:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})


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


ui_router = APIRouter(include_in_schema=False)


@ui_router.get(UI_PATH)
async def inspector_page() -> Response:
    return Response(
        _asset("index.html"), media_type="text/html; charset=utf-8", headers=_SECURITY_HEADERS
    )


@ui_router.get(UI_PATH + "/static/{name}")
async def inspector_asset(name: str) -> Response:
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        raise NotFoundError("no such inspector file")
    return Response(_asset(name), media_type=media_type, headers=_SECURITY_HEADERS)


@ui_router.get(UI_PATH + "/api/scopes")
async def scopes(caller: Caller, request: Request) -> Response:
    runtime = state_of(request).runtime
    assert runtime is not None, "the lifespan opens the runtime before serving"
    visible = [scope for scope in await runtime.store.scope_ids() if caller.allows(scope)]
    return _json({"scopes": sorted(visible)})


@ui_router.post(UI_PATH + "/api/search")
async def search(body: SearchRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    runtime = state_of(request).runtime
    assert runtime is not None
    started = time.perf_counter()
    page = await memory.search(
        SearchMemoryRequest(query=body.query, limit=body.limit, mode=body.mode)
    )
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    reranker = runtime.memory_reranker
    return _json(
        {
            "memory_ref": _ref(page.memory_ref),
            "mode": page.mode,
            "limit": body.limit,
            "elapsed_ms": round(elapsed_ms, 3),
            "reranker": reranker.policy_id if reranker is not None else None,
            "hits": _final_hits(page.hits, page.rerank),
            "rerank": _trace(page.rerank) if page.rerank is not None else None,
            "index_profile_stale": await runtime.memory.profiles.is_stale(body.scope_id),
        }
    )


@ui_router.post(UI_PATH + "/api/entries")
async def entries(body: ListEntriesRequest, caller: Caller, request: Request) -> Response:
    memory = scoped_memory(request, caller, body.scope_id)
    page = await memory.list(revision=body.revision, cursor=body.cursor, limit=body.limit)
    return _json(
        {
            "memory_ref": _ref(page.memory_ref),
            "entries": [_entry(entry) for entry in page.entries],
            "next_cursor": page.next_cursor,
        }
    )


@ui_router.post(UI_PATH + "/api/history")
async def history(body: HistoryRequest, caller: Caller, request: Request) -> Response:
    """Every version of one entry, oldest first, with the change that wrote or retired it."""
    memory = scoped_memory(request, caller, body.scope_id)
    found = await entry_history(memory, body.entry_id, body.revision)
    return _json(
        {
            "memory_ref": _ref(found.memory_ref),
            "entry_id": found.entry_id,
            "changes": [change.model_dump(mode="json") for change in found.changes],
            "versions": [
                _entry(record.entry) | {"written_by": record.written_by.model_dump(mode="json")}
                for record in found.versions
            ],
            "complete": found.complete,
        }
    )
