"""An httpx adapter for dedicated rerank endpoints: the policy `...rerank.scored.v1`.

Speaks the common `POST /rerank` shape (Cohere-, Jina- and TEI-compatible): the request holds
the query and the candidate texts (plus `model` and `top_n` when configured); the response
gives a relevance score per document index, either as `{"results": [{"index", "relevance_score"}]}`
or as TEI's bare `[{"index", "score"}]`. Failures map to the same fail-closed domain errors as
the listwise adapter; messages name the error class and the HTTP status, never a body (it may
echo memory text) and never the API key.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any, Literal

import httpx

from powercontext.config import env_name
from powercontext.memory.bounds import at_least_one, positive
from powercontext.memory.errors import (
    ConfigurationError,
    InferenceError,
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
)
from powercontext.memory.models import InferenceUsage, MemoryHit, MemoryRerankDecision
from powercontext.memory.rerank.listwise import cut_text
from powercontext.memory.rerank.scored import POLICY_ID, ScoredResult, select_by_score

if TYPE_CHECKING:
    from powercontext.config import ServerSettings

DocumentsField = Literal["documents", "texts"]
_OPERATION = "memory rerank (endpoint)"


def map_endpoint_error(exc: Exception) -> InferenceError:
    """The fail-closed domain error for a failed call to the endpoint."""
    kind = type(exc).__name__
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return InferenceTimeoutError(f"{_OPERATION} timed out ({kind})")
    if isinstance(exc, httpx.HTTPStatusError):
        return InferenceUnavailableError(
            f"{_OPERATION} failed: the endpoint answered HTTP {exc.response.status_code}"
        )
    if isinstance(exc, httpx.TransportError | OSError):
        return InferenceUnavailableError(
            f"{_OPERATION} failed: the endpoint is unavailable ({kind})"
        )
    return InvalidInferenceOutputError(f"{_OPERATION} failed unexpectedly ({kind})")


def parse_scores(payload: Any) -> list[ScoredResult]:
    """Scores from either response shape; anything else is invalid output."""
    items = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise InvalidInferenceOutputError(f"{_OPERATION}: the response holds no result list")
    results: list[ScoredResult] = []
    for item in items:
        if not isinstance(item, dict):
            raise InvalidInferenceOutputError(f"{_OPERATION}: a result is not an object")
        index = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        # bool is an int in Python; an index of `true` is garbage, not rank 2.
        if not isinstance(index, int) or isinstance(index, bool):
            raise InvalidInferenceOutputError(f"{_OPERATION}: a result has no integer index")
        if (
            not isinstance(score, int | float)
            or isinstance(score, bool)
            or not math.isfinite(score)
        ):
            raise InvalidInferenceOutputError(f"{_OPERATION}: a result has no finite score")
        results.append(ScoredResult(index=index, score=float(score)))
    return results


class EndpointReranker:
    """A MemoryReranker over one `POST /rerank` endpoint: one HTTP request per rerank.

    No retries (a rate limit fails fast, as with the listwise adapter; the search is
    idempotent). The connection pool lives as long as the adapter; `aclose()` releases it.
    """

    policy_id: str = POLICY_ID

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        model: str | None = None,
        threshold: float | None = None,
        top_k: int | None = None,
        timeout_seconds: float = 30.0,
        max_candidate_chars: int = 1200,
        documents_field: DocumentsField = "documents",
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("url must be an http(s) URL")
        self.url = url
        self.timeout_seconds = positive("timeout_seconds", timeout_seconds)
        self.top_k = None if top_k is None else at_least_one("top_k", top_k)
        self.model = model
        self.threshold = threshold
        self.max_candidate_chars = max_candidate_chars
        self.documents_field: DocumentsField = documents_field
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            headers=headers, timeout=timeout_seconds, transport=transport
        )

    def __repr__(self) -> str:
        return f"EndpointReranker(url={self.url!r}, model={self.model!r})"

    def _body(self, query: str, texts: list[str], limit: int) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query, self.documents_field: texts}
        if self.model is not None:
            body["model"] = self.model
        if self.documents_field == "documents":
            # Cohere and Jina return only the best top_n; asking for fewer than the caller can
            # use would only cost relevance. TEI ("texts") has no top_n and scores everything.
            body["top_n"] = min(len(texts), limit, self.top_k or limit)
        return body

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        if not candidates:
            return MemoryRerankDecision(selected_ranks=())
        texts: list[str] = []
        truncated: list[int] = []
        for rank, hit in enumerate(candidates, start=1):
            text, was_cut = cut_text(hit.text, self.max_candidate_chars)
            texts.append(text)
            if was_cut:
                truncated.append(rank)
        try:
            async with asyncio.timeout(self.timeout_seconds):
                response = await self._client.post(self.url, json=self._body(query, texts, limit))
                response.raise_for_status()
        except Exception as exc:
            raise map_endpoint_error(exc) from exc
        try:
            payload = response.json()
        except ValueError as exc:
            raise InvalidInferenceOutputError(
                f"{_OPERATION}: the response could not be decoded ({type(exc).__name__})"
            ) from exc
        ranks = select_by_score(
            parse_scores(payload), len(candidates), threshold=self.threshold, top_k=self.top_k
        )
        return MemoryRerankDecision(
            selected_ranks=ranks,
            usage=InferenceUsage(requests=1, documents=len(texts)),
            truncated_ranks=tuple(truncated),
        )

    async def aclose(self) -> None:
        await self._client.aclose()


def build_endpoint_reranker(settings: ServerSettings) -> EndpointReranker:
    """The endpoint reranker from `POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENDPOINT_*`."""
    runtime = settings.runtime
    if not runtime.memory_rerank_endpoint_url:
        raise ConfigurationError(
            f"{env_name('runtime', 'memory_rerank_provider')}=endpoint needs "
            f"{env_name('runtime', 'memory_rerank_endpoint_url')} (e.g. http://host:8080/rerank)"
        )
    key = runtime.memory_rerank_endpoint_api_key
    # The endpoint's own HTTP timeout: the rerank deadline when one is set, else the
    # generation timeout that bounds the listwise policy too.
    timeout = runtime.memory_rerank_timeout_seconds or settings.inference.generation_timeout_seconds
    try:
        return EndpointReranker(
            runtime.memory_rerank_endpoint_url,
            api_key=key.get_secret_value() if key is not None else None,
            model=runtime.memory_rerank_endpoint_model,
            threshold=runtime.memory_rerank_endpoint_threshold,
            top_k=runtime.memory_rerank_endpoint_top_k,
            timeout_seconds=timeout,
            max_candidate_chars=runtime.memory_rerank_max_candidate_chars,
            documents_field=runtime.memory_rerank_endpoint_documents_field,
        )
    except ValueError as exc:
        raise ConfigurationError(
            f"{env_name('runtime', 'memory_rerank_endpoint_url')}: {exc}"
        ) from exc
