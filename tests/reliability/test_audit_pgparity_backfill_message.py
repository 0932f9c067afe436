"""The refusal of a vector search for missing vectors says the same on PostgreSQL as on
SQLite: "retry shortly" while the background backfill fills, "run `powercontext reindex`"
when it is off, and the failure of its last pass when it cannot fill; and the HTTP 422
carries the same text.

The SQLite versions are test_audit_reindex2_backfill_message and
test_audit_backfill_failure_shown; their embedders are reused here."""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest

from powercontext import open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.backfill import filling
from powercontext.memory.errors import CapabilityNotSupportedError
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime
from powercontext.server import create_app
from powercontext.testing import FakeEmbedder
from tests import pg_server
from tests.http.live import live_server
from tests.reliability.test_audit_backfill_failure_shown import BROKEN, _BrokenModel
from tests.reliability.test_audit_reindex2_backfill_message import (
    REINDEX,
    RETRY,
    SCOPE,
    _StalledEmbedder,
)

pytestmark = pytest.mark.postgres

PENDING = 3


def _settings(url: str, interval: float) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=url),
        inference=InferenceConfig(embedding_model="hash"),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=interval),
    )


async def _urls(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "pg").mkdir()
    return {
        "sqlite": f"sqlite:///{tmp_path / 'm.db'}",
        "postgres": await pg_server.database_url(tmp_path / "pg"),
    }


async def _leave_pending(url: str) -> None:
    async with open_runtime(
        _settings(url, 0), embedding_model=FakeEmbedder(fail_documents=True)
    ) as rt:
        written = await rt.memory.for_scope(SCOPE).remember_many(
            [RememberMemoryRequest(text=f"note {i} about tomatoes") for i in range(PENDING)]
        )
        assert written.vectors_pending == PENDING


async def _refusals(
    url: str, interval: float, embedder: FakeEmbedder, failing: bool
) -> tuple[str, str]:
    """What a single and a batch search refused for missing vectors say."""
    async with open_runtime(_settings(url, interval), embedding_model=embedder) as runtime:
        assert filling(runtime.memory) == (interval > 0)
        if failing:  # the backfill's first pass, at start, must have failed
            backfill = runtime.backfill
            assert backfill is not None
            for _ in range(250):
                if backfill.failure is not None:
                    break
                await asyncio.sleep(0.02)
        memory = runtime.memory.for_scope(SCOPE)
        with pytest.raises(CapabilityNotSupportedError) as one:
            await memory.search(SearchMemoryRequest(query="tomatoes", mode="vector"))
        with pytest.raises(CapabilityNotSupportedError) as batch:
            await memory.search_batch([SearchMemoryRequest(query="tomatoes", mode="hybrid")])
    return str(one.value), str(batch.value)


async def _both(
    tmp_path: Path, interval: float, embedder: FakeEmbedder, failing: bool = False
) -> tuple[str, str]:
    said = {}
    for backend, url in (await _urls(tmp_path)).items():
        await _leave_pending(url)
        # Bounded: a backfill that a closing runtime failed to stop would hang here.
        said[backend] = await asyncio.wait_for(_refusals(url, interval, embedder, failing), 60)
    assert said["postgres"] == said["sqlite"]
    return said["postgres"]


async def test_with_the_backfill_running_postgres_says_to_retry(tmp_path: Path) -> None:
    one, batch = await _both(tmp_path, 30, _StalledEmbedder())
    assert f"{PENDING} active entries have no vector" in one
    assert one.endswith(RETRY) and REINDEX not in one
    assert batch.startswith("searches.0: search mode 'hybrid'") and batch.endswith(RETRY)


async def test_with_the_backfill_off_postgres_says_to_reindex(tmp_path: Path) -> None:
    one, batch = await _both(tmp_path, 0, _StalledEmbedder())
    assert one.endswith(f"the background backfill is off: {REINDEX}") and "retry" not in one
    assert batch.endswith(f"the background backfill is off: {REINDEX}")


@pytest.mark.parametrize(
    ("embedder", "shown"),
    [
        (_BrokenModel(), f"ConfigurationError: {BROKEN}"),
        (FakeEmbedder(fail_documents=True, failure_message="token sk-secret"), "ConnectionError"),
    ],
)
async def test_a_failing_backfill_is_named_alike_on_postgres(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, embedder: FakeEmbedder, shown: str
) -> None:
    caplog.set_level(logging.WARNING)
    one, batch = await _both(tmp_path, 30, embedder, failing=True)
    remedy = f"the background backfill failed its last pass ({shown}); it retries with backoff"
    assert one.endswith(remedy) and batch.endswith(remedy)
    assert "retry shortly" not in one
    assert not any("sk-secret" in r.getMessage() for r in caplog.records)


def _stalled_runtime(
    settings: ServerSettings, observer: SearchObserver
) -> AbstractAsyncContextManager[Runtime]:
    return open_runtime(settings, embedding_model=_StalledEmbedder(), search_observer=observer)


def test_the_postgres_wire_carries_the_same_422(tmp_path: Path) -> None:
    urls = asyncio.run(_urls(tmp_path))
    answers = {}
    for backend, url in urls.items():
        asyncio.run(_leave_pending(url))
        app = create_app(_settings(url, 30), runtime_factory=_stalled_runtime)
        with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
            answer = http.post(
                "/v1/memory/search", json={"scope_id": SCOPE, "query": "tomatoes", "mode": "vector"}
            )
        answers[backend] = (answer.status_code, answer.json())
    assert answers["postgres"] == answers["sqlite"]
    status, body = answers["postgres"]
    assert status == 422 and body["error"]["message"].endswith(RETRY), body
