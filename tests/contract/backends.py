"""The storage backends the contract suite runs against.

Adding a backend is one entry in BACKENDS: an async factory that opens (or reopens) the store
kept in a test's private directory. Opening the same directory again must give the same data
when the backend is `persistent`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from powercontext.memory.ports import MemoryStore
from powercontext.storage.sqlite import SqliteMemoryStore

from .. import pg_server

Factory = Callable[[Path], Awaitable[MemoryStore]]


@dataclass(frozen=True)
class Backend:
    open: Factory
    persistent: bool = True
    """Reopening the same directory gives the same data (and a second store may share it)."""
    marks: tuple[Any, ...] = field(default=())


async def _sqlite_file(workdir: Path) -> MemoryStore:
    return await SqliteMemoryStore.open(workdir / "db" / "memory.sqlite3")


async def _sqlite_memory(workdir: Path) -> MemoryStore:
    return await SqliteMemoryStore.open(":memory:")


BACKENDS: dict[str, Backend] = {
    "sqlite-file": Backend(_sqlite_file),
    "sqlite-memory": Backend(_sqlite_memory, persistent=False),
    "postgres": Backend(pg_server.open_store, marks=(pytest.mark.postgres,)),
}
