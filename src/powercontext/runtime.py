"""Composition: settings -> storage, embedder, reranker -> the Memory service.

The only place that knows which adapter serves which port.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from typing import TypeVar

from powercontext.config import LLAMACPP_PREFIX, RuntimeConfig, ServerSettings, env_name
from powercontext.memory.backfill import VectorBackfill
from powercontext.memory.errors import ConfigurationError, NotFoundError
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.ports import EmbeddingModel, MemoryReranker, MemoryStore
from powercontext.memory.rerank.cache import RerankCache
from powercontext.memory.rerank.guard import GuardedReranker
from powercontext.memory.search.analyze import AnalyzerConfig
from powercontext.memory.search.candidates import CandidatePolicy
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.search.feedback import FeedbackConfig
from powercontext.memory.search.fields import FieldWeights
from powercontext.memory.search.fusion import RrfConfig
from powercontext.memory.search.vector_feedback import VectorFeedbackConfig
from powercontext.memory.service import MemoryService, SearchObserver

log = logging.getLogger("powercontext.runtime")

C = TypeVar("C")

ReindexProgress = Callable[[str, int, int], None]


@dataclass
class Runtime:
    """An open PowerContext: `runtime.memory.for_scope(scope_id)` is the Memory of a scope."""

    settings: ServerSettings
    store: MemoryStore
    memory: MemoryService
    backfill: VectorBackfill | None = None
    """Fills pending vectors in the background; None without an embedder or when disabled."""

    @property
    def embedding_model(self) -> EmbeddingModel | None:
        """The embedding model in use; None when vectors are off."""
        return self.memory.embedder

    @property
    def memory_reranker(self) -> MemoryReranker | None:
        """The reranker in use (guarded as configured); None when reranking is off."""
        return self.memory.reranker

    async def reindex(
        self,
        progress: ReindexProgress | None = None,
        *,
        rebuild: bool = False,
        scopes: Sequence[str] | None = None,
    ) -> dict[str, int]:
        """Embed every active entry of every scope that lacks a vector of the current profile.

        `rebuild`: instead re-derive the tokens and vectors of every active entry under the
        current index profile (no revision is made), and record that profile with the scope.
        `scopes`: only these (NotFoundError, before any work, naming those the store lacks).
        The background backfill pauses meanwhile, so the two never embed the same versions
        and the counts are this call's own."""
        async with self.memory.calls.call():
            return await self._reindex(progress, rebuild, scopes)

    async def _reindex(
        self, progress: ReindexProgress | None, rebuild: bool, scopes: Sequence[str] | None
    ) -> dict[str, int]:
        if self.backfill is not None:
            await self.backfill.stop()
        counts: dict[str, int] = {}
        try:
            targets = await self.store.scope_ids()
            if scopes is not None:
                # Refused, not skipped: a rebuild of a scope never written would record a
                # profile for it.
                unknown = unknown_scopes(scopes, targets)
                if unknown:
                    raise NotFoundError(f"no scope {', '.join(map(repr, unknown))} in this store")
                targets = list(dict.fromkeys(scopes))
            for scope_id in targets:

                def report(done: int, total: int, scope_id: str = scope_id) -> None:
                    if progress is not None:
                        progress(scope_id, done, total)

                if rebuild:
                    counts[scope_id] = await self.memory.rebuild(scope_id, report)
                else:
                    counts[scope_id] = await self.memory.reindex(scope_id, report)
        finally:
            # Not once the runtime closes: the filler would outlive the store it reads.
            if self.backfill is not None and not self.memory.calls.closed:
                self.backfill.start()
        return counts


def unknown_scopes(scopes: Iterable[str], known: Iterable[str]) -> list[str]:
    """Those of `scopes` (once each, in order) that are not among `known`."""
    have = set(known)
    return [scope for scope in dict.fromkeys(scopes) if scope not in have]


def search_config(settings: ServerSettings) -> SearchConfig:
    runtime = settings.runtime
    return SearchConfig(
        candidate_limit=runtime.memory_rerank_candidate_limit,
        min_similarity=runtime.search_min_similarity,
        fusion=_from_settings(RrfConfig, runtime, "search_rrf_"),
        timeout_seconds=runtime.search_timeout_seconds,
        candidates=CandidatePolicy(
            name=runtime.memory_rerank_candidate_policy,
            class_limits=runtime.memory_rerank_candidate_limits_by_class,
        ),
        rerank_concurrency=settings.inference.generation_max_requests,
        max_batch_queries=runtime.max_batch_queries,
        analyzer=_from_settings(AnalyzerConfig, runtime, "analyzer_"),
        participant_boost=runtime.search_participant_boost,
        fts_common_term_entries=runtime.search_fts_common_term_entries,
        feedback=_from_settings(FeedbackConfig, runtime, "search_feedback_"),
        vector_feedback=_from_settings(VectorFeedbackConfig, runtime, "search_vector_feedback_"),
        fields=_from_settings(FieldWeights, runtime, "search_field_weight_"),
        max_batch_entries=runtime.max_batch_entries,
        embedding_batch_size=runtime.embedding_batch_size,
        index=_from_settings(IndexTextConfig, runtime, "index_"),
    )


def _from_settings(config: type[C], runtime: RuntimeConfig, prefix: str) -> C:
    """A config whose fields are the settings named `prefix` + field name; a field without
    such a setting keeps its default (tests/unit/test_runtime_settings_map.py checks that
    every setting with the prefix names a field)."""
    values = {
        field.name: getattr(runtime, prefix + field.name)
        for field in fields(config)  # type: ignore[arg-type]
        if prefix + field.name in RuntimeConfig.model_fields
    }
    return config(**values)


def build_reranker(settings: ServerSettings) -> MemoryReranker | None:
    """The configured built-in reranker, guarded as configured, or None when disabled."""
    if not settings.runtime.memory_rerank_enabled:
        return None
    if settings.runtime.memory_rerank_provider == "endpoint":
        from powercontext.inference.rerank_endpoint import build_endpoint_reranker

        return guard_reranker(settings, build_endpoint_reranker(settings))
    if settings.inference.generation_model is None:
        raise ConfigurationError(
            f"{env_name('runtime', 'memory_rerank_enabled')}=true needs a generation model: set "
            f"{env_name('inference', 'generation_model')} (provider:model-name) or inject a "
            "MemoryReranker with open_runtime(..., memory_reranker=...)"
        )
    from powercontext.inference.pydantic_ai import build_generation_reranker

    if is_llamacpp_model(settings.inference.generation_model):
        return guard_reranker(settings, build_local_model_reranker(settings))
    return guard_reranker(settings, build_generation_reranker(settings))


def is_llamacpp_model(spec: str | None) -> bool:
    return spec is not None and spec.startswith(LLAMACPP_PREFIX)


def build_local_model_reranker(settings: ServerSettings) -> MemoryReranker:
    """The listwise reranker over a local GGUF model: it owns the llama.cpp server started
    here, which stops when the runtime closes the reranker."""
    from powercontext.inference.llamacpp import LlamaCppServer, model_path
    from powercontext.inference.pydantic_ai import build_generation_reranker

    inference = settings.inference
    server = LlamaCppServer.start(
        model_path(inference.generation_model or ""),
        threads=inference.llamacpp_threads,
        context_size=inference.llamacpp_context_size,
    )
    try:
        return build_generation_reranker(
            settings, local_base_url=server.base_url, on_close=server.close
        )
    except BaseException:
        server.close()
        raise


def guard_reranker(settings: ServerSettings, reranker: MemoryReranker) -> MemoryReranker:
    """`reranker` inside a GuardedReranker when a deadline, fail-open or the cache is set;
    otherwise `reranker` itself, so the defaults keep the RFC's fail-closed path untouched."""
    runtime = settings.runtime
    cache = None
    if runtime.memory_rerank_cache_ttl_seconds > 0:
        cache = RerankCache(
            ttl_seconds=runtime.memory_rerank_cache_ttl_seconds,
            max_entries=runtime.memory_rerank_cache_max_entries,
        )
    if (
        cache is None
        and runtime.memory_rerank_timeout_seconds is None
        and runtime.search_timeout_seconds is None
        and runtime.memory_rerank_failure_policy == "fail_closed"
    ):
        return reranker
    return GuardedReranker(
        reranker,
        failure_policy=runtime.memory_rerank_failure_policy,
        timeout_seconds=runtime.memory_rerank_timeout_seconds,
        cache=cache,
    )


def build_embedder(settings: ServerSettings) -> EmbeddingModel | None:
    from powercontext.inference.embeddings import build_embedding_model

    return build_embedding_model(settings.inference.embedding_model)


@asynccontextmanager
async def open_runtime(
    settings: ServerSettings | None = None,
    *,
    embedding_model: EmbeddingModel | None = None,
    memory_reranker: MemoryReranker | None = None,
    store: MemoryStore | None = None,
    search_observer: SearchObserver | None = None,
) -> AsyncIterator[Runtime]:
    """Open storage and models from `settings` (default: the environment).

    `embedding_model=None` builds the configured one; an injected `memory_reranker` is applied
    even when reranking is disabled in the settings (RFC: composition is explicit).
    Configuration errors are raised before any storage is opened.
    """
    settings = settings if settings is not None else ServerSettings()
    # An injected reranker gets the configured guard too (deadline, failure policy, cache).
    reranker = (
        guard_reranker(settings, memory_reranker)
        if memory_reranker is not None
        else build_reranker(settings)
    )
    owned = store is None
    try:
        embedder = embedding_model if embedding_model is not None else build_embedder(settings)
        if store is None:
            from powercontext.storage import open_store

            store = await open_store(settings.database.resolved_url())
    except BaseException:
        await _close_built_reranker(reranker, injected=memory_reranker is not None)
        raise
    service = MemoryService(
        store,
        embedder=embedder,
        reranker=reranker,
        config=search_config(settings),
        observer=search_observer,
    )
    log.info(
        "runtime open",
        extra={
            "embedding_profile": embedder.profile.profile_id if embedder else None,
            "rerank_policy": reranker.policy_id if reranker else None,
        },
    )
    backfill = None
    interval = settings.runtime.vector_backfill_interval_seconds
    if embedder is not None and interval > 0:
        backfill = VectorBackfill(service, interval_seconds=interval)
        backfill.start()
    try:
        yield Runtime(settings=settings, store=store, memory=service, backfill=backfill)
    finally:
        # New calls are refused first, so nothing restarts the backfill; the calls in flight
        # (a write between its commit and its read-back) finish before the store closes.
        service.calls.refuse()
        if backfill is not None:
            await backfill.stop()
        await service.calls.close()
        await _close_built_reranker(reranker, injected=memory_reranker is not None)
        if owned:
            await store.close()


async def _close_built_reranker(reranker: MemoryReranker | None, *, injected: bool) -> None:
    # A built-in reranker that holds connections (the endpoint adapter) or a local model server
    # (llama.cpp) is ours to close; an injected one belongs to the caller.
    inner = reranker.inner if isinstance(reranker, GuardedReranker) else reranker
    close = getattr(inner, "aclose", None) if not injected else None
    if close is not None:
        await close()
