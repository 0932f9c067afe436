"""An explicit `vector` search refused for missing vectors says what will fill them: the
background backfill when it runs (retry shortly), else `powercontext reindex`.

The vectors are left missing by a provider that fails after the text commit; the embedder keeps
failing in the runtime under test, so the backfill runs but cannot fill them while we look."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from powercontext import open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.backfill import filling
from powercontext.memory.errors import CapabilityNotSupportedError
from powercontext.memory.search.modes import select_mode
from powercontext.server import create_app
from powercontext.testing import FakeEmbedder
from tests.http.live import live_server

SCOPE = "notes"


class _StalledEmbedder(FakeEmbedder):
    """Documents never come back: the backfill is filling, neither done nor failed, for as long
    as the test looks (a failing provider would make its last pass a failure instead)."""

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.document_calls += 1
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


RETRY = "the background backfill is filling them: retry shortly"
REINDEX = "run `powercontext reindex`"


def _settings(db: Path, interval: float) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="hash"),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=interval),
    )


async def _leave_pending(db: Path, count: int) -> None:
    embedder = FakeEmbedder(fail_documents=True)
    async with open_runtime(_settings(db, 0), embedding_model=embedder) as runtime:
        written = await runtime.memory.for_scope(SCOPE).remember_many(
            [RememberMemoryRequest(text=f"note {i} about tomatoes") for i in range(count)]
        )
        assert written.vectors_pending == count


async def _refusal(db: Path, interval: float) -> str:
    embedder = _StalledEmbedder()  # the backfill, if any, cannot fill yet
    async with open_runtime(_settings(db, interval), embedding_model=embedder) as runtime:
        assert (runtime.backfill is not None) == (interval > 0)
        assert filling(runtime.memory) == (interval > 0)
        memory = runtime.memory.for_scope(SCOPE)
        with pytest.raises(CapabilityNotSupportedError) as refused:
            await memory.search(SearchMemoryRequest(query="tomatoes", mode="vector"))
        with pytest.raises(CapabilityNotSupportedError) as batch:
            await memory.search_batch([SearchMemoryRequest(query="tomatoes", mode="hybrid")])
        assert str(batch.value).startswith("searches.0: search mode 'hybrid'")
        assert str(batch.value).endswith(str(refused.value).split("; ")[-1])
    assert not filling(runtime.memory)  # closed: no backfill runs any more
    return str(refused.value)


async def test_with_the_backfill_running_the_refusal_says_to_retry(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    await _leave_pending(db, 3)
    message = await _refusal(db, interval=30)
    assert "3 active entries have no vector" in message
    assert message.endswith(RETRY) and REINDEX not in message


async def test_with_the_backfill_off_the_refusal_says_to_reindex(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    await _leave_pending(db, 3)
    message = await _refusal(db, interval=0)
    assert "3 active entries have no vector" in message
    assert message.endswith(f"the background backfill is off: {REINDEX}")
    assert "retry" not in message


async def test_a_reindex_pausing_the_backfill_is_not_taken_for_a_running_one(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    await _leave_pending(db, 2)
    async with open_runtime(_settings(db, 30), embedding_model=FakeEmbedder()) as runtime:
        assert filling(runtime.memory)
        seen: list[bool] = []
        await runtime.reindex(lambda *_: seen.append(filling(runtime.memory)))
        assert seen and not any(seen)  # paused while the reindex fills
        assert filling(runtime.memory)  # and running again after it


def test_the_wire_carries_the_retry_hint(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    asyncio.run(_leave_pending(db, 2))
    embedder = _StalledEmbedder()

    def factory(settings: ServerSettings, observer: object) -> object:
        return open_runtime(settings, embedding_model=embedder, search_observer=observer)  # type: ignore[arg-type]

    app = create_app(_settings(db, 30), runtime_factory=factory)  # type: ignore[arg-type]
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        answer = http.post(
            "/v1/memory/search", json={"scope_id": SCOPE, "query": "tomatoes", "mode": "vector"}
        )
    assert answer.status_code == 422
    assert RETRY in answer.text and REINDEX not in answer.text


@pytest.mark.parametrize(("backfilling", "remedy"), [(True, RETRY), (False, REINDEX)])
def test_select_mode_names_the_remedy(backfilling: bool, remedy: str) -> None:
    with pytest.raises(CapabilityNotSupportedError, match="5 active entries") as refused:
        select_mode(
            "vector", has_embedder=True, missing_vectors=5, profile_id="p", backfilling=backfilling
        )
    assert str(refused.value).endswith(remedy)
    # Nothing missing: the backfill changes nothing.
    assert select_mode("hybrid", has_embedder=True, missing_vectors=0, backfilling=backfilling)
