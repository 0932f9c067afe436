from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from powercontext import Runtime, ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig
from tests.fakes.openai_server import FakeOpenAIServer


def sqlite_settings(path: Path, embedding_model: str = "none", **runtime: object) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{path}"),
        inference=InferenceConfig(embedding_model=embedding_model),
        runtime=runtime,
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
async def runtime(db_path: Path) -> AsyncIterator[Runtime]:
    async with open_runtime(sqlite_settings(db_path, "hash")) as rt:
        yield rt


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """The loopback fake OpenAI-compatible provider; a request no test scripted fails it."""
    with FakeOpenAIServer() as fake:
        yield fake
        assert fake.unexpected == [], "a request arrived that the test did not script"
