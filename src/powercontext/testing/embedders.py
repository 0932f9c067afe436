"""A deterministic embedder for tests, whose provider can be made to fail."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.inference.embeddings.hashing import DEFAULT_DIMENSION, HashingEmbedder


class FakeEmbedder(HashingEmbedder):
    """The hashing embedder (no model, same vectors in every process) with switches that make
    document or query embedding raise `ConnectionError`, as a provider outage would.

    The runtime must keep every write through an outage (`vectors_pending`), serve `auto`
    searches from full-text and refuse an explicit vector mode; these switches let a test
    prove it. `document_calls` and `query_calls` count the calls, failed ones included.
    """

    def __init__(
        self,
        dimension: int = DEFAULT_DIMENSION,
        *,
        fail_documents: bool = False,
        fail_queries: bool = False,
        failure_message: str = "provider down",
    ) -> None:
        super().__init__(dimension)
        self.fail_documents = fail_documents
        self.fail_queries = fail_queries
        self.failure_message = failure_message
        self.document_calls = 0
        self.query_calls = 0

    @property
    def calls(self) -> int:
        return self.document_calls + self.query_calls

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.document_calls += 1
        if self.fail_documents:
            raise ConnectionError(self.failure_message)
        return await super().embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        if self.fail_queries:
            raise ConnectionError(self.failure_message)
        return await super().embed_query(text)

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """A batch search's one call for all its queries: one query call."""
        self.query_calls += 1
        if self.fail_queries:
            raise ConnectionError(self.failure_message)
        return await super().embed_queries(texts)
