"""PowerContext: durable, revisioned Memory for AI agents, with hybrid search and reranking.

from powercontext import ServerSettings, open_runtime
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest

async with open_runtime(ServerSettings()) as runtime:
    memory = runtime.memory.for_scope("project")
    await memory.remember(RememberMemoryRequest(kind="fact", text="We deploy on Fridays."))
    page = await memory.search(SearchMemoryRequest(query="when do we deploy?"))
"""

from powercontext.config import ServerSettings
from powercontext.runtime import Runtime, open_runtime

__version__ = "0.1.0"
__all__ = ["Runtime", "ServerSettings", "__version__", "open_runtime"]
