"""PowerContext: durable, revisioned Memory for AI agents, with hybrid search and reranking.

from powercontext import ServerSettings, open_runtime
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest

async with open_runtime(ServerSettings()) as runtime:
    memory = runtime.memory.for_scope("project")
    await memory.remember(RememberMemoryRequest(kind="fact", text="We deploy on Fridays."))
    page = await memory.search(SearchMemoryRequest(query="when do we deploy?"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Runtime", "ServerSettings", "__version__", "open_runtime"]

if TYPE_CHECKING:
    from powercontext.config import ServerSettings
    from powercontext.runtime import Runtime, open_runtime


def __getattr__(name: str) -> Any:
    # Lazy: the SDK and CLI import `powercontext.*` without paying for the runtime's imports.
    if name == "ServerSettings":
        from powercontext.config import ServerSettings

        return ServerSettings
    if name in ("Runtime", "open_runtime"):
        from powercontext import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'powercontext' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy names too, so `dir()` and completion show what `__getattr__` serves.
    return sorted({*globals(), *__all__})
