"""Pending vectors are filled without `reindex` (issue 19, item 1).

Vectors go missing when a writer dies between its text commit and its vector write (the crash
runs in test_crash_safety.py) or when the provider fails after the commit; here the provider
fails, which leaves exactly the same database state. Reopening the runtime fills them at once;
a running one fills them on its next pass; /v1/ready and /metrics report them meanwhile, and
`auto` says in the log why it served fts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import httpx
import pytest

from powercontext import open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.server import create_app
from powercontext.server.readiness import ReadinessProbe
from powercontext.testing import FakeEmbedder
from tests.http.live import live_server

SCOPE = "backfill"


def _settings(db: Path, interval: float = 30.0) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="hash"),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=interval),
    )


async def _leave_pending(db: Path, count: int) -> None:
    embedder = FakeEmbedder()
    embedder.fail_documents = True
    settings = _settings(db, interval=0)  # no filler: the vectors stay missing
    async with open_runtime(settings, embedding_model=embedder) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        written = await memory.remember_many(
            [RememberMemoryRequest(text=f"garden note {i} about tomatoes") for i in range(count)]
        )
        assert written.vectors_pending == count
        assert await memory.pending_vectors() == count


async def _until(condition: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert callable(condition)
        if await condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


async def test_reopening_fills_pending_vectors_without_reindex(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    await _leave_pending(db, 150)
    async with open_runtime(_settings(db)) as runtime:
        assert runtime.backfill is not None
        memory = runtime.memory.for_scope(SCOPE)

        async def filled() -> bool:
            # The store first, then the backfill's own count, which it takes after a scope.
            return await memory.pending_vectors() == 0 and runtime.backfill.pending_total == 0

        await _until(filled)
        assert runtime.backfill.filled_total == 150
        assert runtime.backfill.pending_total == 0
        page = await memory.search(SearchMemoryRequest(query="tomatoes", mode="vector", limit=3))
        assert page.mode == "vector" and len(page.hits) == 3
        auto = await memory.search(SearchMemoryRequest(query="tomatoes", limit=3))
        assert auto.mode == "hybrid"


async def test_auto_logs_when_pending_vectors_make_it_serve_fts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    await _leave_pending(db, 3)
    async with open_runtime(_settings(db, interval=0)) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        with caplog.at_level(logging.WARNING, logger="powercontext.memory.backfill"):
            page = await memory.search(SearchMemoryRequest(query="tomatoes", limit=3))
        assert page.mode == "fts"
        (record,) = [r for r in caplog.records if "auto search served fts" in r.getMessage()]
        assert getattr(record, "vectors_pending", None) == 3
        assert getattr(record, "scope_id", None) == SCOPE


async def test_a_failing_provider_is_retried_and_never_kills_the_filler(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    embedder = FakeEmbedder()
    async with open_runtime(_settings(db, interval=0.05), embedding_model=embedder) as runtime:
        assert runtime.backfill is not None
        memory = runtime.memory.for_scope(SCOPE)
        embedder.fail_documents = True
        written = await memory.remember(RememberMemoryRequest(text="written during an outage"))
        assert written.vectors_pending == 1
        await asyncio.sleep(0.3)  # several failed passes
        assert await memory.pending_vectors() == 1
        embedder.fail_documents = False

        async def filled() -> bool:
            # The store first, then the backfill's own count, which it takes after a scope.
            return await memory.pending_vectors() == 0 and runtime.backfill.pending_total == 0

        await _until(filled, 15.0)  # the backoff doubles from 0.05 s: a few seconds at most
    assert runtime.backfill._task is None  # stopped cleanly with the runtime


def test_ready_and_metrics_report_pending_vectors(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    asyncio.run(_leave_pending(db, 4))
    embedder = FakeEmbedder()
    embedder.fail_documents = True  # the filler cannot fill yet: the count must show

    def factory(settings: ServerSettings, observer: object) -> object:
        return open_runtime(settings, embedding_model=embedder, search_observer=observer)  # type: ignore[arg-type]

    app = create_app(_settings(db, interval=0.1), runtime_factory=factory)  # type: ignore[arg-type]
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        ready = http.get("/v1/ready").json()
        assert ready["vectors_pending"] == 4 and ready["status"] == "ready"
        assert "4 vectors pending" in ready["checks"]["vectors"]["detail"]
        assert "powercontext_memory_vectors_pending 4.0" in http.get("/metrics").text
        vector = http.post(
            "/v1/memory/search", json={"scope_id": SCOPE, "query": "tomatoes", "mode": "vector"}
        )
        assert vector.status_code == 422
        embedder.fail_documents = False
        deadline = time.monotonic() + 15
        while http.get("/v1/ready").json()["vectors_pending"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert http.get("/v1/ready").json()["vectors_pending"] == 0
        assert "powercontext_memory_vectors_pending 0.0" in http.get("/metrics").text
        vector = http.post(
            "/v1/memory/search", json={"scope_id": SCOPE, "query": "tomatoes", "mode": "vector"}
        )
        assert vector.status_code == 200


def test_without_a_backfill_ready_counts_and_metrics_show_its_count(tmp_path: Path) -> None:
    db = tmp_path / "off.db"
    asyncio.run(_leave_pending(db, 3))
    app = create_app(_settings(db, interval=0))  # the backfill is off
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        ready = http.get("/v1/ready").json()
        assert ready["vectors_pending"] == 3
        assert "backfill is off" in ready["checks"]["vectors"]["detail"]
        assert "powercontext_memory_vectors_pending 3.0" in http.get("/metrics").text


async def test_ready_counts_itself_until_the_backfill_has_counted(tmp_path: Path) -> None:
    """Right after a restart the backfill's first pass may not have counted yet: an empty
    count then is 'not known', not 'nothing pending'."""
    db = tmp_path / "early.db"
    await _leave_pending(db, 2)
    embedder = FakeEmbedder()
    embedder.fail_documents = True
    async with open_runtime(_settings(db, interval=30), embedding_model=embedder) as runtime:
        backfill = runtime.backfill
        assert backfill is not None
        backfill.counted, backfill.pending = False, {}  # as before its first count
        probe = ReadinessProbe(runtime)
        assert (await probe.check()).vectors_pending == 2
        assert probe.vectors_pending() == 2


async def test_a_new_embedding_profile_is_filled_without_reindex(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    no_model = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
    )
    async with open_runtime(no_model) as runtime:
        await runtime.memory.for_scope(SCOPE).remember_many(
            [RememberMemoryRequest(text=f"fact {i} about tea") for i in range(6)]
        )
    async with open_runtime(_settings(db)) as runtime:
        memory = runtime.memory.for_scope(SCOPE)

        async def hybrid() -> bool:
            page = await memory.search(SearchMemoryRequest(query="tea", limit=3))
            return page.mode == "hybrid"

        await _until(hybrid)


async def test_an_explicit_reindex_pauses_the_backfill_and_counts_its_own(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    await _leave_pending(db, 40)
    async with open_runtime(_settings(db)) as runtime:
        assert runtime.backfill is not None
        # No await between opening and reindex: the startup pass has not run yet.
        counts = await runtime.reindex()
        assert counts == {SCOPE: 40}
        assert runtime.backfill.filled_total == 0
        assert runtime.backfill._task is not None  # running again afterwards
