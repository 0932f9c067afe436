"""The search pipeline wired end to end: one exact revision from the first read to the page.

`SearchPipeline.search_batch` reads the head and picks each request's mode; `_search_at` then
runs the README's flow for one request:

    analyze -> channels -> admit -> feedback -> fuse (-> participants) -> hits -> rerank
    -> normalize ranks -> resolve

Each stage is a pure function in `memory/search/`; this class only sequences them around the
two ports that do I/O (the store, the reranker) and the query embedding.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from powercontext.memory.backfill import backfill_failure, filling, warn_auto_served_fts
from powercontext.memory.errors import (
    CapabilityNotSupportedError,
    MemoryValidationError,
    NotFoundError,
)
from powercontext.memory.models import (
    ChannelScore,
    MemoryHit,
    MemoryRef,
    MemorySearchPage,
    SearchMemoryRequest,
)
from powercontext.memory.ports import (
    FtsCandidate,
    FtsQuery,
    Vector,
    VectorCandidate,
    VectorQuery,
)
from powercontext.memory.rerank.deadline import search_deadline
from powercontext.memory.search.admission import Admission, admit
from powercontext.memory.search.analyze import analyze, query_terms
from powercontext.memory.search.batching import all_or_nothing, embed_chunk, first_of_each
from powercontext.memory.search.candidates import CandidateChoice
from powercontext.memory.search.feedback import FeedbackConfig, bounded, feed_back
from powercontext.memory.search.fields import SPEAKER_PREFIX
from powercontext.memory.search.fusion import FusedCandidate, channel_scores, fuse_rrf
from powercontext.memory.search.hits import hits_of
from powercontext.memory.search.modes import (
    channel_limit,
    coarse_limit,
    in_batch,
    select_mode,
    uses_fts,
    uses_vector,
)
from powercontext.memory.search.participants import favour_participants, named_participants
from powercontext.memory.search.rerank_stage import rerank
from powercontext.memory.search.vector_feedback import VectorFeedbackConfig, with_vector_feedback
from powercontext.memory.values import ResolvedMode
from powercontext.memory.vectors import unit_vector

if TYPE_CHECKING:
    from powercontext.memory.service import MemoryService


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What the analyze stage decides for one request before any candidate is read."""

    request: SearchMemoryRequest
    mode: ResolvedMode
    terms: tuple[str, ...]
    vector: Vector | None
    choice: CandidateChoice
    coarse: int
    """The pool size handed to the reranker (or cut to the page without one)."""
    per_channel: int


@dataclass(frozen=True, slots=True)
class Retrieved:
    """The fused pool of one plan, with what explain and the participant boost need."""

    fused: list[FusedCandidate]
    explained: dict[int, tuple[ChannelScore, ...]]


class SearchPipeline:
    """The query-time flow over one MemoryService's store, embedder, reranker and config."""

    def __init__(self, service: MemoryService) -> None:
        self._service = service
        self._store = service.store
        self._config = service.config

    async def search(self, scope_id: str, request: SearchMemoryRequest) -> MemorySearchPage:
        (page,) = await self.search_batch(scope_id, [request], batch=False)
        return page

    async def search_batch(
        self, scope_id: str, requests: Sequence[SearchMemoryRequest], *, batch: bool = True
    ) -> tuple[MemorySearchPage, ...]:
        """Every request answered at one head read once, with one embedder call for all queries
        and at most `rerank_concurrency` reranks in flight. The first error fails the whole call
        (the single search's fail-closed policy); a fail-open guard marks pages instead.
        `batch`: errors name their search (`searches.N: `), as a batch call's must."""
        store, embedder, config = self._store, self._service.embedder, self._config
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
        # Only a refusal for missing vectors reads the backfill's state: once per call.
        backfilling = bool(missing) and filling(self._service)
        failure = backfill_failure(self._service) if backfilling else None
        modes: list[ResolvedMode] = []
        for i, r in enumerate(requests):
            try:
                modes.append(
                    select_mode(
                        r.mode,
                        has_embedder=embedder is not None,
                        missing_vectors=missing,
                        profile_id=profile.profile_id if profile else None,
                        backfilling=backfilling,
                        backfill_failure=failure,
                    )
                )
            except CapabilityNotSupportedError as exc:
                raise CapabilityNotSupportedError(in_batch(i, batch) + str(exc)) from None
        if missing and any(
            m == "fts" and r.mode == "auto" for m, r in zip(modes, requests, strict=True)
        ):
            warn_auto_served_fts(scope_id, missing)
        if head is None:
            return tuple(MemorySearchPage(memory_ref=None, mode=m, hits=()) for m in modes)
        vectors = await self._query_vectors(requests, modes, batch=batch)
        rerank_slots = asyncio.Semaphore(config.rerank_concurrency)
        # A search repeated within a batch is answered once: the same head, so the same page,
        # and one rerank (a generation request) instead of one per copy.
        slots = first_of_each(requests, modes)
        distinct = sorted(set(slots))
        with search_deadline(deadline):
            pages = await all_or_nothing(
                [
                    self._search_at(scope_id, head, requests[i], modes[i], vectors[i], rerank_slots)
                    for i in distinct
                ]
            )
        answered = dict(zip(distinct, pages, strict=True))
        return tuple(answered[slot] for slot in slots)

    async def _query_vectors(
        self, requests: Sequence[SearchMemoryRequest], modes: list[ResolvedMode], *, batch: bool
    ) -> list[Vector | None]:
        """Unit query vectors of the requests whose mode uses them, from one embedder call
        per `embedding_batch_size` queries (the deployment's texts-per-call bound).

        When embedding fails, `auto` requests fall back to fts (in `modes`); an explicit vector
        or hybrid request fails the whole call with the typed capability error.
        """
        vectors: list[Vector | None] = [None] * len(requests)
        wanted = [i for i, mode in enumerate(modes) if uses_vector(mode)]
        embedder = self._service.embedder
        if not wanted or embedder is None:
            return vectors
        texts = [requests[i].query for i in wanted]
        size = self._config.embedding_batch_size
        chunks = [texts[start : start + size] for start in range(0, len(texts), size)]
        try:
            if len(chunks) == 1:
                raw: Sequence[Sequence[float]] = await embed_chunk(embedder, chunks[0])
            else:
                # All or nothing, as one call would be: the first failure cancels the rest.
                parts = await all_or_nothing([embed_chunk(embedder, c) for c in chunks])
                raw = [row for part in parts for row in part]
            for i, row in zip(wanted, raw, strict=True):
                vectors[i] = unit_vector(row, embedder.profile.dimension)
        except Exception as exc:  # the provider's failure must not escape raw
            for i in wanted:
                if requests[i].mode != "auto":
                    raise CapabilityNotSupportedError(
                        f"{in_batch(i, batch)}search mode {requests[i].mode!r} failed: "
                        f"embedding the query raised {type(exc).__name__}"
                    ) from exc
                modes[i] = "fts"
                vectors[i] = None
        return vectors

    async def _search_at(
        self,
        scope_id: str,
        head: int,
        request: SearchMemoryRequest,
        mode: ResolvedMode,
        query_vector: Vector | None,
        rerank_slots: asyncio.Semaphore,
    ) -> MemorySearchPage:
        plan = self._analyze(request, mode, query_vector)
        retrieved = await self._retrieve(scope_id, head, plan)
        pool = await self._hits(scope_id, head, retrieved)
        ref = MemoryRef(scope_id=scope_id, revision=head)
        reranker = self._service.reranker
        if reranker is None or not pool:
            return MemorySearchPage(memory_ref=ref, mode=mode, hits=pool[: request.limit])
        async with rerank_slots:
            hits, trace = await rerank(reranker, request, pool, plan.choice)
        return MemorySearchPage(
            memory_ref=ref, mode=mode, hits=hits, rerank=trace, rerank_status=trace.rerank_status
        )

    def _analyze(
        self, request: SearchMemoryRequest, mode: ResolvedMode, query_vector: Vector | None
    ) -> QueryPlan:
        config = self._config
        choice = config.candidates.choose(request.query, config.analyzer, config.candidate_limit)
        reranking = self._service.reranker is not None
        coarse = coarse_limit(request.limit, choice.candidate_limit, reranking=reranking)
        return QueryPlan(
            request=request,
            mode=mode,
            terms=tuple(query_terms(request.query, config.analyzer)),
            vector=query_vector,
            choice=choice,
            coarse=coarse,
            per_channel=channel_limit(coarse),
        )

    async def _retrieve(self, scope_id: str, head: int, plan: QueryPlan) -> Retrieved:
        """channels -> admit -> feedback -> fuse (-> participants): the coarse pool of one plan."""
        request = plan.request
        floor = (
            self._config.min_similarity
            if request.min_similarity is None
            else request.min_similarity
        )
        if self._runs_vector(plan):
            # Full-text admission and its feedback run read only the full-text channel, so
            # that chain overlaps the vector search instead of following it. The vector
            # search starts first: it hands its work to a thread at once, while a small
            # scope's full-text search may run on the loop without yielding (storage.sqlite).
            vector_found, fts_admitted = await asyncio.gather(
                self._vector(scope_id, head, plan), self._fts_admitted(scope_id, head, plan)
            )
        else:  # nothing to overlap: no task to create and schedule
            vector_found, fts_admitted = [], await self._fts_admitted(scope_id, head, plan)
        vector_admitted = admit((), vector_found, (), min_similarity=floor)
        admitted = Admission(
            fts_found=fts_admitted.fts_found,
            vector_found=vector_admitted.vector_found,
            keys={"fts": fts_admitted.keys["fts"], "vector": vector_admitted.keys["vector"]},
        )
        admitted = await self._vector_feed_back(scope_id, head, plan, admitted, floor)
        fused = await self._fuse(scope_id, plan, admitted)
        explained = channel_scores(
            admitted.keys,
            {
                "fts": {c.key: c.score for c in admitted.fts_found},
                "vector": {c.key: c.similarity for c in admitted.vector_found},
            },
            keys=[f.key for f in fused],  # only the pool's hits carry an explanation
        )
        return Retrieved(fused, explained)

    async def _fts_admitted(self, scope_id: str, head: int, plan: QueryPlan) -> Admission:
        """The full-text channel admitted, then asked again with what its first matches
        share (search.feedback)."""
        config, floor_score = self._config, plan.request.min_score

        async def fts_again(expansion: list[str]) -> list[FtsCandidate]:
            found = await self._fts(
                scope_id,
                head,
                replace(plan, terms=tuple(expansion)),
                bounded_by=config.feedback,
            )
            return [c for c in found if floor_score is None or c.score >= floor_score]

        found = await self._fts(scope_id, head, plan)
        admitted = admit(found, (), plan.terms, min_score=floor_score)
        return await feed_back(
            admitted, plan.terms, fts_again, config.feedback, config.analyzer, k=config.fusion.k
        )

    async def _vector_feed_back(
        self, scope_id: str, head: int, plan: QueryPlan, admitted: Admission, floor: float
    ) -> Admission:
        """The vector channel asked again with the text of the first full-text matches
        (search.vector_feedback)."""
        config = self._config

        async def vector_again(text: str) -> list[VectorCandidate]:
            embedder = self._service.embedder
            if embedder is None:
                return []
            vector = unit_vector(await embedder.embed_query(text), embedder.profile.dimension)
            return await self._vector(scope_id, head, replace(plan, vector=vector))

        async def texts(keys: list[int]) -> list[str]:
            rows = await self._store.fetch_versions(scope_id, keys)
            return [rows[key].text for key in keys if key in rows]

        vector_keys = await with_vector_feedback(
            plan.request.query,
            admitted.keys["fts"],
            admitted.keys["vector"],
            texts,
            vector_again,
            config.vector_feedback if plan.vector is not None else VectorFeedbackConfig(),
            floor=floor,
            k=config.fusion.k,
        )
        return replace(admitted, keys={"fts": admitted.keys["fts"], "vector": vector_keys})

    async def _fts(
        self, scope_id: str, head: int, plan: QueryPlan, bounded_by: FeedbackConfig | None = None
    ) -> list[FtsCandidate]:
        """The full-text channel's candidates; an expansion run (`bounded_by` feedback's
        config) leaves out the terms too much of the scope holds."""
        if not uses_fts(plan.mode) or not plan.terms:
            return []
        query = FtsQuery(
            scope_id,
            head,
            plan.terms,
            limit=plan.per_channel,
            fields=self._config.fields,
            where=plan.request.filter,
            common_term_entries=self._config.fts_common_term_entries or None,
        )
        if bounded_by is not None:
            query = bounded(query, bounded_by)
        return await self._store.fts_candidates(query)

    def _runs_vector(self, plan: QueryPlan) -> bool:
        embedder = self._service.embedder
        return plan.vector is not None and embedder is not None and uses_vector(plan.mode)

    async def _vector(self, scope_id: str, head: int, plan: QueryPlan) -> list[VectorCandidate]:
        embedder = self._service.embedder
        if plan.vector is None or embedder is None or not uses_vector(plan.mode):
            return []
        query = VectorQuery(
            scope_id,
            head,
            embedder.profile.profile_id,
            plan.vector,
            limit=plan.per_channel,
            where=plan.request.filter,
        )
        return await self._store.vector_candidates(query)

    async def _fuse(
        self, scope_id: str, plan: QueryPlan, admitted: Admission
    ) -> list[FusedCandidate]:
        config = self._config
        keys = admitted.keys
        named = (
            named_participants(plan.terms, admitted.fts_found)
            if config.participant_boost > 0
            else frozenset()
        )
        fused = fuse_rrf(
            keys,
            limit=len(keys["fts"]) + len(keys["vector"]) if named else plan.coarse,
            k=config.fusion.k,
            weights=config.fusion.weights,
        )
        if not named:
            return fused
        speakers = await self._speakers(scope_id, fused, admitted.fts_found)
        return favour_participants(fused, speakers, named, config.participant_boost, plan.coarse)

    async def _speakers(
        self,
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
        key = self._config.index.speaker_key
        missing = [c.key for c in fused if c.key not in speakers]
        if missing and key is not None:
            for row in (await self._store.fetch_versions(scope_id, missing)).values():
                value = row.metadata.get(key)
                if isinstance(value, str):
                    speakers[row.key] = frozenset(analyze(value, self._config.analyzer))
        return speakers

    async def _hits(
        self, scope_id: str, revision: int, retrieved: Retrieved
    ) -> tuple[MemoryHit, ...]:
        fused, explained = retrieved.fused, retrieved.explained
        if not fused:
            return ()
        stored = await self._store.fetch_versions(scope_id, [f.key for f in fused])
        return hits_of(MemoryRef(scope_id=scope_id, revision=revision), fused, stored, explained)
