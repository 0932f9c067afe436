"""The two ways the harness reaches PowerContext, both through public interfaces only:
in-process via `open_runtime`, or over HTTP via the SDK's `PowerContextClient`.

Neither constructs a reranker nor touches a hit's order: rerank is a runtime setting, and the
pages are returned exactly as PowerContext produced them.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, RuntimeConfig
from powercontext.config.secrets import masked_values
from powercontext.memory.errors import RevisionConflictError
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest


class BackendUnavailableError(RuntimeError):
    """The SDK (`powercontext.client.PowerContextClient`) cannot be loaded."""


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    scope_id: str
    entries: int
    reused: bool
    """The scope already held exactly this content (a resumed run, or a shared server)."""
    vectors_embedded_late: int = 0
    seconds: float = 0.0
    """Wall time of the writes (and of any late embedding), for entries/s."""


WriteMode = Literal["turns", "batch"]
"""`turns`: one `remember` per entry, as an agent writes; `batch`: one `remember_many`."""


class ScopeContentError(RuntimeError):
    """The scope named for a conversation holds other writes than that conversation's turns."""


async def write_entries(
    memory: Any, requests: Sequence[RememberMemoryRequest], write: WriteMode
) -> bool:
    """Write the entries; False when the scope already held them (its id is a content hash).

    The first write is a compare-and-swap on "the scope is empty", so a resumed run or a
    shared server reuses a complete scope instead of appending to it. A scope left partial by
    an interrupted `turns` ingest holds a prefix of the entries, written in order: the rest
    is written now, or the run would be scored against part of the conversation.
    """
    if not requests:
        # A conversation without a written turn (counted when loading): nothing to write,
        # and its questions search an empty scope.
        return True
    first = _first_entry_of_empty_scope(requests)
    try:
        if write == "batch":
            await _maybe_await(memory.remember_many(first))
            return True
        await _maybe_await(memory.remember(first[0]))
        written = 1
    except RevisionConflictError:
        added = await _entries_added(memory)
        if added is None or added > len(requests):
            raise ScopeContentError(
                "the benchmark scope already holds writes other than this conversation's "
                "entries; delete it (or use another --out / server) and run again"
            ) from None
        if added == len(requests):
            return False
        written = added
    for request in requests[written:]:
        await _maybe_await(memory.remember(request))
    return True


async def _entries_added(memory: Any) -> int | None:
    """How many entries the scope's change log adds; None when it holds any other change."""
    added, since = 0, 0
    while True:
        page = await _maybe_await(memory.changes(since, limit=1000))
        if not page.changes:
            return added
        if any(change.op != "add" for change in page.changes):
            return None
        added += len(page.changes)
        if page.next_since_revision <= since:
            return added
        since = page.next_since_revision


class MemoryBackend(Protocol):
    name: str
    trace_available: bool
    """Whether `page.rerank` (the coarse pool of a reranked search) can be observed."""

    async def ingest(
        self, scope_id: str, requests: Sequence[RememberMemoryRequest], write: WriteMode = "turns"
    ) -> IngestOutcome: ...

    async def search(self, scope_id: str, request: SearchMemoryRequest) -> Any: ...

    def describe(self) -> dict[str, Any]:
        """The effective configuration, recorded in results.json and the resume fingerprint."""
        ...


def bench_settings(
    base: ServerSettings, *, rerank: bool, top_k: int, database_path: Path
) -> ServerSettings:
    """The caller's settings with the two rerank knobs set and a private database file, so a
    benchmark never writes into the user's own PowerContext database."""
    runtime = RuntimeConfig(
        **{
            **base.runtime.model_dump(),
            "memory_rerank_enabled": rerank,
            "memory_rerank_candidate_limit": top_k,
        }
    )
    return ServerSettings(
        runtime=runtime,
        inference=base.inference,
        database=DatabaseConfig(url=f"sqlite:///{database_path}"),
        http=base.http,
        log_format=base.log_format,
    )


def _first_entry_of_empty_scope(
    requests: Sequence[RememberMemoryRequest],
) -> list[RememberMemoryRequest]:
    # expected_revision=0 makes the write a compare-and-swap on "the scope is empty": a scope
    # that already holds this content (its id is a content hash) answers with a conflict.
    return [request.model_copy(update={"expected_revision": 0}) for request in requests]


async def _timed_ingest(
    memory: Any,
    scope_id: str,
    requests: Sequence[RememberMemoryRequest],
    write: WriteMode,
    *,
    fill_vectors: bool,
) -> IngestOutcome:
    """Writes the requests and, in process, fills the vectors left pending (counted as late)
    within the same timing; over the SDK the server's backfill is not waited for."""
    started = time.perf_counter()
    reused = not await write_entries(memory, requests, write)
    late = 0
    if fill_vectors and await memory.pending_vectors():
        late = await memory.reindex()
    return IngestOutcome(scope_id, len(requests), reused, late, time.perf_counter() - started)


class _ScopeBackend:
    """Ingest and search through `source.memory.for_scope(scope_id)`, which the runtime and
    the SDK client both provide; only the in-process one fills pending vectors itself."""

    fill_vectors: bool

    def __init__(self, source: Any) -> None:
        self._source = source

    async def ingest(
        self, scope_id: str, requests: Sequence[RememberMemoryRequest], write: WriteMode = "turns"
    ) -> IngestOutcome:
        memory = self._source.memory.for_scope(scope_id)
        return await _timed_ingest(
            memory, scope_id, requests, write, fill_vectors=self.fill_vectors
        )

    async def search(self, scope_id: str, request: SearchMemoryRequest) -> Any:
        return await _maybe_await(self._source.memory.for_scope(scope_id).search(request))


class InProcessBackend(_ScopeBackend):
    name = "in-process"
    trace_available = True
    fill_vectors = True

    def describe(self) -> dict[str, Any]:
        runtime = self._source
        settings: ServerSettings = runtime.settings
        embedder = runtime.embedding_model
        reranker = runtime.memory_reranker
        return {
            "backend": self.name,
            "runtime": masked_values(settings.runtime.model_dump(mode="json")),
            "embedding_model": settings.inference.embedding_model,
            "embedding_profile": embedder.profile.profile_id if embedder else None,
            "generation_model": settings.inference.generation_model,
            "rerank_policy": getattr(reranker, "policy_id", None) if reranker else None,
        }


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class SdkBackend(_ScopeBackend):
    """Over HTTP the v1 response carries no rerank trace: coarse metrics are unavailable when
    the server reranks."""

    name = "sdk"
    trace_available = False
    fill_vectors = False

    def __init__(self, client: Any, url: str) -> None:
        super().__init__(client)
        self._url = url

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "server": self._url}


@contextlib.asynccontextmanager
async def open_in_process(settings: ServerSettings) -> AsyncIterator[InProcessBackend]:
    async with open_runtime(settings) as runtime:
        yield InProcessBackend(runtime)


@contextlib.asynccontextmanager
async def open_sdk(url: str) -> AsyncIterator[SdkBackend]:
    try:
        client_class = importlib.import_module("powercontext.client").PowerContextClient
    except (ImportError, AttributeError) as exc:
        raise BackendUnavailableError(
            f"--server needs the SDK, powercontext.client.PowerContextClient ({exc})"
        ) from exc
    client = client_class(url)
    try:
        yield SdkBackend(client, url)
    finally:
        closer = getattr(client, "aclose", None) or getattr(client, "close", None)
        if closer is not None:
            await _maybe_await(closer())
