from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from powercontext.memory.ports import MemoryStore

from .backends import BACKENDS, Backend


@pytest.fixture(params=[pytest.param(name, marks=b.marks, id=name) for name, b in BACKENDS.items()])
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture
async def store(backend: Backend, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    opened = await backend.open(tmp_path)
    try:
        yield opened
    finally:
        await opened.close()
