"""The runtime owns the llama.cpp server of a `llamacpp:` model: started when it opens, stopped
when it closes, and stopped too when opening fails half-way. The server is replaced by a
recording double here so the lifecycle is checked without the [llm] extra; the real server's
start and stop are checked in test_llamacpp_rerank.py."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig
from powercontext.inference import llamacpp
from powercontext.inference.pydantic_ai import PydanticAIListwiseReranker


@dataclass
class RecordingServer:
    path: Path
    threads: int | None
    context_size: int
    closed: int = 0
    base_url: str = "http://127.0.0.1:9/v1"


@dataclass
class Starts:
    servers: list[RecordingServer] = field(default_factory=list)


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> Starts:
    record = Starts()

    def start(path: Path, *, threads: int | None, context_size: int) -> RecordingServer:
        server = RecordingServer(path, threads, context_size)
        server_close = server  # bound below so the double counts its own stops

        def close() -> None:
            server_close.closed += 1

        server.close = close  # type: ignore[attr-defined]
        record.servers.append(server)
        return server

    monkeypatch.setattr(llamacpp.LlamaCppServer, "start", staticmethod(start))
    real = importlib.util.find_spec
    monkeypatch.setattr(  # the settings check for the extra; the double needs none
        importlib.util, "find_spec", lambda n, *a: object() if n == "xllamacpp" else real(n, *a)
    )
    return record


def settings(tmp_path: Path, database: str) -> ServerSettings:
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    inference: dict[str, Any] = {
        "embedding_model": "none",
        "generation_model": f"llamacpp:{gguf}",
        "llamacpp_threads": 3,
        "llamacpp_context_size": 1024,
    }
    return ServerSettings(
        database=DatabaseConfig(url=database),
        inference=InferenceConfig.model_validate(inference),
        runtime=RuntimeConfig(memory_rerank_enabled=True),
    )


async def test_the_server_starts_with_the_runtime_and_stops_with_it(
    tmp_path: Path, starts: Starts
) -> None:
    async with open_runtime(settings(tmp_path, f"sqlite:///{tmp_path / 'm.db'}")) as runtime:
        (server,) = starts.servers
        assert (server.path, server.threads, server.context_size) == (
            tmp_path / "model.gguf",
            3,
            1024,
        )
        reranker = runtime.memory_reranker
        assert isinstance(reranker, PydanticAIListwiseReranker)
        assert reranker.output_mode == "native"
        assert reranker.model.base_url.rstrip("/") == server.base_url
        assert server.closed == 0
    assert server.closed == 1


async def test_a_failed_open_stops_the_server_it_started(tmp_path: Path, starts: Starts) -> None:
    unopenable = tmp_path / "a-directory"
    unopenable.mkdir()
    with pytest.raises(Exception):  # noqa: B017 - whichever error the store raises
        async with open_runtime(settings(tmp_path, f"sqlite:///{unopenable}")):
            pass
    (server,) = starts.servers
    assert server.closed == 1
