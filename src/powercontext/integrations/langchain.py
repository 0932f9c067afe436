"""A LangChain retriever over the PowerContext SDK (`pip install 'powercontext-memory[langchain]'`).

    from powercontext.integrations.langchain import PowerContextRetriever

    retriever = PowerContextRetriever(scope_id="project", server_url="http://127.0.0.1:8000")
    docs = retriever.invoke("when do we deploy?")          # or: await retriever.ainvoke(...)

Each Document is one final hit: `page_content` is the entry text, `id` the entry version, and
`metadata` carries the citation (pass it to `memory get` / `POST /v1/memory/entries/get` to
read exactly that version later), the score, the channels, the kind and the entry's own
metadata (under `metadata`, so it cannot collide with these keys).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field, SecretStr

from powercontext.client import PowerContextClient, SyncPowerContextClient
from powercontext.memory.models import MemoryHit, SearchMemoryRequest
from powercontext.memory.values import SearchMode


def hit_document(hit: MemoryHit) -> Document:
    metadata: dict[str, Any] = {
        "citation": hit.citation.model_dump(mode="json"),
        "scope_id": hit.memory_ref.scope_id,
        "revision": hit.memory_ref.revision,
        "entry_id": hit.entry_id,
        "entry_version_id": hit.entry_version_id,
        "kind": hit.kind,
        "score": hit.score,
        "matched_by": list(hit.matched_by),
        "metadata": dict(hit.metadata),
    }
    return Document(page_content=hit.text, metadata=metadata, id=hit.entry_version_id)


class PowerContextRetriever(BaseRetriever):
    """The final hits of one scope's search, as LangChain Documents."""

    scope_id: str
    server_url: str | None = Field(
        default=None, description="Default: POWERCONTEXT_CLIENT_SERVER_URL, else the local server."
    )
    api_key: SecretStr | None = Field(
        default=None, description="Default: POWERCONTEXT_CLIENT_API_KEY."
    )
    limit: int = Field(default=5, ge=1, le=100)
    mode: SearchMode = "auto"
    timeout: float | None = None

    def _request(self, query: str) -> SearchMemoryRequest:
        return SearchMemoryRequest(query=query, limit=self.limit, mode=self.mode)

    def _key(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key is not None else None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        with SyncPowerContextClient(
            self.server_url, api_key=self._key(), timeout=self.timeout
        ) as client:
            page = client.memory.for_scope(self.scope_id).search(self._request(query))
        return [hit_document(hit) for hit in page.hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        async with PowerContextClient(
            self.server_url, api_key=self._key(), timeout=self.timeout
        ) as client:
            page = await client.memory.for_scope(self.scope_id).search(self._request(query))
        return [hit_document(hit) for hit in page.hits]
