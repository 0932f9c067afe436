"""A backfill that cannot fill (a broken model file, a provider outage) is not announced as
"retry shortly": the refusal of a vector search names the last pass's failure, and the logs
and readiness show our own ConfigurationError's message (the file to fix), where a provider's
failure shows only its type (its message may carry a URL or a key)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.errors import (
    CapabilityNotSupportedError,
    ConfigurationError,
    failure_summary,
)
from powercontext.testing import FakeEmbedder

BROKEN = "the model file model.onnx does not match its sha256: reinstall the local extra"


class _BrokenModel(FakeEmbedder):
    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.document_calls += 1
        raise ConfigurationError(BROKEN)


def _settings(db: Path, interval: float) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="hash"),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=interval),
    )


@pytest.mark.parametrize(
    ("embedder", "shown"),
    [
        (_BrokenModel(), f"ConfigurationError: {BROKEN}"),
        (FakeEmbedder(fail_documents=True, failure_message="token sk-secret"), "ConnectionError"),
    ],
)
async def test_a_failing_backfill_is_named_in_the_refusal_and_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, embedder: FakeEmbedder, shown: str
) -> None:
    caplog.set_level(logging.WARNING)
    db = tmp_path / "m.db"
    async with open_runtime(_settings(db, 0), embedding_model=embedder) as runtime:
        written = await runtime.memory.for_scope("notes").remember(
            RememberMemoryRequest(text="tomatoes ripen in july")
        )
        assert written.vectors_pending == 1
    # A backfill's first pass, at start, finds the pending vector and fails on it.
    async with open_runtime(_settings(db, 30), embedding_model=embedder) as runtime:
        memory = runtime.memory.for_scope("notes")
        backfill = runtime.backfill
        assert backfill is not None
        for _ in range(200):  # its first pass runs at start
            if backfill.failure is not None:
                break
            await asyncio.sleep(0.02)
        assert backfill.failure == shown
        with pytest.raises(CapabilityNotSupportedError) as refused:
            await memory.search(SearchMemoryRequest(query="tomatoes", mode="vector"))
    message = str(refused.value)
    assert message.endswith(
        f"the background backfill failed its last pass ({shown}); it retries with backoff"
    )
    assert "retry shortly" not in message
    logged = [r.getMessage() for r in caplog.records]
    assert any("embedding failed after commit" in line and shown in line for line in logged)
    assert any("vector backfill failed" in line and shown in line for line in logged)
    assert not any("sk-secret" in line for line in logged)


def test_only_our_configuration_errors_show_their_message() -> None:
    assert failure_summary(ConfigurationError("set X")) == "ConfigurationError: set X"
    assert failure_summary(RuntimeError("https://user:key@host")) == "RuntimeError"
