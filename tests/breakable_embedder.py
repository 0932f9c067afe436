"""An offline embedder that a test can break mid-way, to see what a failing provider leaves."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.inference.embeddings.hashing import HashingEmbedder


class BreakableEmbedder(HashingEmbedder):
    """The hash embedder; its document embeddings raise ConnectionError while `broken`."""

    broken = False

    async def embed_documents(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        if self.broken:
            raise ConnectionError("provider down")
        return await super().embed_documents(texts)
