"""Where `powercontext memory ...` runs: a server through the SDK, or the embedded store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from powercontext.client.memory import AsyncScopedMemoryClient
    from powercontext.memory.scoped import ScopedMemory

CliMemory: TypeAlias = "ScopedMemory | AsyncScopedMemoryClient"
"""What the commands use: the runtime's ScopedMemory (--local) or the SDK's; both have the
same methods, so each is declared once, by its own class."""


@dataclass(frozen=True)
class Target:
    local: bool
    server_url: str | None = None
    api_key: str | None = None


@asynccontextmanager
async def open_memory(target: Target, scope_id: str) -> AsyncIterator[CliMemory]:
    if target.local:
        from powercontext.cli.running import local_runtime

        async with local_runtime() as runtime:
            yield runtime.memory.for_scope(scope_id)
    else:
        from powercontext.client import PowerContextClient

        async with PowerContextClient(target.server_url, api_key=target.api_key) as client:
            yield client.memory.for_scope(scope_id)
