"""The search pipeline wired end to end: one exact revision from the first read to the page.

Each stage is a pure function in `search/`; this module only sequences them around the two
ports that do I/O (the store, the reranker) and the query embedding.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from powercontext.memory.backfill import warn_auto_served_fts
from powercontext.memory.errors import (
    CapabilityNotSupportedError,
    MemoryValidationError,
    NotFoundError,
)
from powercontext.memory.models import (
    Channel,
    ChannelScore,
    MemoryHit,
    MemoryRef,
    MemoryRerankTrace,
    MemorySearchPage,
    RerankStatus,
    ResolvedMode,
    SearchMemoryRequest,
)
from powercontext.memory.ports import FtsCandidate, MemoryReranker, Vector, VectorCandidate
from powercontext.memory.rerank.deadline import search_deadline
from powercontext.memory.search.admission import admit_fts, admit_vector
from powercontext.memory.search.analyze import analyze, query_terms
from powercontext.memory.search.candidates import CandidateChoice
from powercontext.memory.search.feedback import with_feedback
from powercontext.memory.search.fields import SPEAKER_PREFIX
from powercontext.memory.search.fusion import FusedCandidate, channel_scores, fuse_rrf
from powercontext.memory.search.modes import (
    channel_limit,
    coarse_limit,
    select_mode,
    uses_fts,
    uses_vector,
)
from powercontext.memory.search.participants import favour_participants, named_participants
from powercontext.memory.search.ranks import normalize_ranks, resolve
from powercontext.memory.search.vector_feedback import VectorFeedbackConfig, with_vector_feedback
from powercontext.memory.vectors import unit_vector

if TYPE_CHECKING:
    from powercontext.memory.service import MemoryService

rerank_log = logging.getLogger("powercontext.memory.rerank")


async def run_search(
    service: MemoryService, scope_id: str, request: SearchMemoryRequest
) -> MemorySearchPage:
    (page,) = await run_search_batch(service, scope_id, [request])
    return page


async def run_search_batch(
    service: MemoryService, scope_id: str, requests: Sequence[SearchMemoryRequest]
) -> tuple[MemorySearchPage, ...]:
    """Every request answered at one head read once, with one embedder call for all queries
    and at most `rerank_concurrency` reranks in flight. The first error fails the whole call
    (the single search's fail-closed policy); a fail-open guard marks pages instead."""
    store, embedder, config = service.store, service.embedder, service.config
    deadline = None
    if config.timeout_seconds is not None:
        deadline = asyncio.get_running_loop().time() + config.timeout_seconds
    head = await store.head(scope_id)
    revisions = {r.revision for r in requests}
    if len(revisions) > 1:
        raise MemoryValidationError("the searches of one batch must name one revision")
    (revision,) = revisions
    if revision is not None:
        # As-of search: every channel reads this one revision, as they read the head otherwise.
        if head is None or revision > head:
            raise NotFoundError(f"scope {scope_id!r} has no revision {revision}")
        head = revision
    profile = embedder.profile if embedder is not None else None
    missing = 0
    if head is not None and profile is not None and any(r.mode != "fts" for r in requests):
        missing = await store.missing_vector_count(scope_id, head, profile.profile_id)
    modes = [
        select_mode(
            r.mode,
            has_embedder=embedder is not None,
            missing_vectors=missing,
            profile_id=profile.profile_id if profile else None,
        )
        for r in requests
    ]
    if missing and any(
        m == "fts" and r.mode == "auto" for m, r in zip(modes, requests, strict=True)
    ):
        warn_auto_served_fts(scope_id, missing)
    if head is None:
        return tuple(MemorySearchPage(memory_ref=None, mode=m, hits=()) for m in modes)
    vectors = await _query_vectors(service, requests, modes)
    rerank_slots = asyncio.Semaphore(config.rerank_concurrency)
    with search_deadline(deadline):
        return await _all_or_nothing(
            [
                _search_at(service, scope_id, head, request, mode, vector, rerank_slots)
                for request, mode, vector in zip(requests, modes, vectors, strict=True)
            ]
        )


async def _query_vectors(
    service: MemoryService, requests: Sequence[SearchMemoryRequest], modes: list[ResolvedMode]
) -> list[Vector | None]:
    """Unit query vectors of the requests whose mode uses them, from one embedder call.

    When embedding fails, `auto` requests fall back to fts (in `modes`); an explicit vector
    or hybrid request fails the whole call with the typed capability error.
    """
    vectors: list[Vector | None] = [None] * len(requests)
    wanted = [i for i, mode in enumerate(modes) if uses_vector(mode)]
    embedder = service.embedder
    if not wanted or embedder is None:
        return vectors
    texts = [requests[i].query for i in wanted]
    try:
        if len(texts) == 1:
            raw: Sequence[Sequence[float]] = [await embedder.embed_query(texts[0])]
        else:
            raw = await embedder.embed_queries(texts)
        if len(raw) != len(texts):
            raise ValueError(f"{len(raw)} vectors for {len(texts)} queries")
        for i, row in zip(wanted, raw, strict=True):
            vectors[i] = unit_vector(row, embedder.profile.dimension)
    except Exception as exc:  # the provider's failure must not escape raw
        for i in wanted:
            if requests[i].mode != "auto":
                raise CapabilityNotSupportedError(
                    f"search mode {requests[i].mode!r} failed: embedding the query raised "
                    f"{type(exc).__name__}"
                ) from exc
            modes[i] = "fts"
            vectors[i] = None
    return vectors


async def _all_or_nothing(
    searches: list[Coroutine[Any, Any, MemorySearchPage]],
) -> tuple[MemorySearchPage, ...]:
    """Run concurrently, in order; on the first error cancel the rest and raise it."""
    if len(searches) == 1:
        return (await searches[0],)
    tasks = [asyncio.ensure_future(search) for search in searches]
    try:
        return tuple(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _search_at(
    service: MemoryService,
    scope_id: str,
    head: int,
    request: SearchMemoryRequest,
    mode: ResolvedMode,
    query_vector: Vector | None,
    rerank_slots: asyncio.Semaphore,
) -> MemorySearchPage:
    store, embedder, config = service.store, service.embedder, service.config
    profile = embedder.profile if embedder is not None else None
    reranker = service.reranker
    choice = config.candidates.choose(request.query, config.analyzer, config.candidate_limit)
    coarse = coarse_limit(request.limit, choice.candidate_limit, reranking=reranker is not None)
    per_channel = channel_limit(coarse)
    terms = query_terms(request.query, config.analyzer)

    async def fts() -> list[FtsCandidate]:
        if not uses_fts(mode) or not terms:
            return []
        return await store.fts_candidates(
            scope_id, head, terms, limit=per_channel, fields=config.fields, where=request.filter
        )

    async def vector() -> list[VectorCandidate]:
        if query_vector is None or profile is None or not uses_vector(mode):
            return []
        return await store.vector_candidates(
            scope_id,
            head,
            profile.profile_id,
            query_vector,
            limit=per_channel,
            where=request.filter,
        )

    async def fts_again(expansion: list[str]) -> list[FtsCandidate]:
        found = await store.fts_candidates(
            scope_id,
            head,
            expansion,
            limit=per_channel,
            fields=config.fields,
            where=request.filter,
        )
        return [c for c in found if request.min_score is None or c.score >= request.min_score]

    async def vector_again(text: str) -> list[VectorCandidate]:
        if embedder is None or profile is None:
            return []
        again = unit_vector(await embedder.embed_query(text), profile.dimension)
        return await store.vector_candidates(
            scope_id, head, profile.profile_id, again, limit=per_channel, where=request.filter
        )

    fts_found, vector_found = await asyncio.gather(fts(), vector())
    if request.min_score is not None:
        fts_found = [c for c in fts_found if c.score >= request.min_score]
    floor = config.min_similarity if request.min_similarity is None else request.min_similarity
    admitted: dict[Channel, list[int]] = {
        "fts": admit_fts(fts_found, terms),
        "vector": admit_vector(vector_found, floor),
    }
    admitted["fts"], fed = await with_feedback(
        terms,
        fts_found,
        admitted["fts"],
        fts_again,
        config.feedback,
        config.analyzer,
        k=config.rrf_k,
    )
    admitted["vector"] = await with_vector_feedback(
        request.query,
        admitted["fts"],
        admitted["vector"],
        lambda keys: _texts(service, scope_id, keys),
        vector_again,
        config.vector_feedback if query_vector is not None else VectorFeedbackConfig(),
        floor=floor,
        k=config.rrf_k,
    )
    explained = channel_scores(
        admitted,
        {
            "fts": {c.key: c.score for c in fts_found},
            "vector": {c.key: c.similarity for c in vector_found},
        },
    )
    named = named_participants(terms, fts_found) if config.participant_boost > 0 else frozenset()
    fused = fuse_rrf(
        admitted,
        limit=len(admitted["fts"]) + len(admitted["vector"]) if named else coarse,
        k=config.rrf_k,
        weights={"fts": config.weight_fts, "vector": config.weight_vector},
    )
    if named:
        speakers = await _speakers(service, scope_id, fused, [*fts_found, *fed])
        fused = favour_participants(fused, speakers, named, config.participant_boost, coarse)
    pool = await _hits(service, scope_id, head, fused, explained)
    ref = MemoryRef(scope_id=scope_id, revision=head)
    if reranker is None or not pool:
        return MemorySearchPage(memory_ref=ref, mode=mode, hits=pool[: request.limit])
    async with rerank_slots:
        hits, trace = await _rerank(reranker, request, pool, choice)
    return MemorySearchPage(
        memory_ref=ref, mode=mode, hits=hits, rerank=trace, rerank_status=trace.rerank_status
    )


async def _texts(service: MemoryService, scope_id: str, keys: list[int]) -> list[str]:
    rows = await service.store.fetch_versions(scope_id, keys)
    return [rows[key].text for key in keys if key in rows]


async def _speakers(
    service: MemoryService,
    scope_id: str,
    fused: list[FusedCandidate],
    fts_found: list[FtsCandidate],
) -> dict[int, frozenset[str]]:
    """Speaker words of every fused candidate: from the full-text tokens where the channel
    returned them, else from the stored metadata, analyzed as the index does."""
    prefix = len(SPEAKER_PREFIX)
    speakers = {
        c.key: frozenset(t[prefix:] for t in c.tokens if t.startswith(SPEAKER_PREFIX))
        for c in fts_found
    }
    key = service.config.index.speaker_key
    missing = [c.key for c in fused if c.key not in speakers]
    if missing and key is not None:
        for row in (await service.store.fetch_versions(scope_id, missing)).values():
            value = row.metadata.get(key)
            if isinstance(value, str):
                speakers[row.key] = frozenset(analyze(value, service.config.analyzer))
    return speakers


async def _hits(
    service: MemoryService,
    scope_id: str,
    revision: int,
    fused: list[FusedCandidate],
    explained: dict[int, tuple[ChannelScore, ...]],
) -> tuple[MemoryHit, ...]:
    if not fused:
        return ()
    stored = await service.store.fetch_versions(scope_id, [f.key for f in fused])
    ref = MemoryRef(scope_id=scope_id, revision=revision)
    return tuple(
        MemoryHit(
            memory_ref=ref,
            entry_id=row.entry_id,
            entry_version_id=row.entry_version_id,
            kind=row.kind,
            text=row.text,
            metadata=row.metadata,
            score=f.score,
            matched_by=f.matched_by,
            thread=row.thread,
            occurred_at=row.event_time,
            explain=explained.get(f.key, ()),
        )
        for f in fused
        if (row := stored.get(f.key)) is not None
    )


async def _rerank(
    reranker: MemoryReranker,
    request: SearchMemoryRequest,
    pool: tuple[MemoryHit, ...],
    choice: CandidateChoice,
) -> tuple[tuple[MemoryHit, ...], MemoryRerankTrace]:
    """One reranker call, no lock held; inference errors propagate (fail-closed) unless a
    GuardedReranker configured for fail-open turned an outage into a degraded decision."""
    started = time.perf_counter()
    decision = await reranker.rerank(request.query, pool, request.limit)
    latency_ms = (time.perf_counter() - started) * 1000.0
    status: RerankStatus
    if decision.degraded:
        # The guard already chose the coarse first k; nothing the provider said is normalized.
        selected: tuple[int, ...] = tuple(range(1, min(request.limit, len(pool)) + 1))
        discarded: tuple[int, ...] = ()
        used_fallback = False
        status = (
            "degraded_invalid_output"
            if decision.degraded_cause == "invalid_output"
            else "degraded_provider_error"
        )
    else:
        selection = normalize_ranks(decision.selected_ranks, len(pool), request.limit)
        selected, discarded, used_fallback = (
            selection.selected,
            selection.discarded,
            selection.used_fallback,
        )
        status = "fallback_no_valid_rank" if used_fallback else "applied"
    trace = MemoryRerankTrace(
        policy_id=reranker.policy_id,
        candidate_hits=pool,
        selected_ranks=selected,
        discarded_rank_count=len(discarded),
        discarded_ranks=discarded,
        used_fallback=used_fallback,
        latency_ms=latency_ms,
        usage=decision.usage,
        truncated_ranks=decision.truncated_ranks,
        rerank_status=status,
        cache_hit=decision.cache_hit,
        candidate_policy_id=choice.policy_id,
        query_class=choice.query_class,
        candidate_limit=choice.candidate_limit,
    )
    log = rerank_log.warning if decision.degraded else rerank_log.info
    log(
        "memory rerank",
        extra={
            "policy_id": trace.policy_id,
            "rerank_status": status,
            "cache_hit": decision.cache_hit,
            "candidate_count": len(pool),
            "candidate_policy_id": choice.policy_id,
            "query_class": choice.query_class,
            "selected_count": len(selected),
            "discarded_count": trace.discarded_rank_count,
            "used_fallback": trace.used_fallback,
            "latency_ms": round(latency_ms, 3),
            "requests": decision.usage.requests,
            "input_tokens": decision.usage.input_tokens,
            "output_tokens": decision.usage.output_tokens,
            "documents": decision.usage.documents,
        },
    )
    return resolve(pool, selected), trace
