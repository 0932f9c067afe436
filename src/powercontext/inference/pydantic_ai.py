"""Pydantic AI adapters: the listwise reranker and remote embedding models.

The only module of PowerContext that imports pydantic_ai. Everything that leaves it is a
domain type (MemoryRerankDecision, EmbeddingProfile) or a domain error: provider exceptions are
mapped fail-closed, chained for debugging, and never quoted, because a provider's error body can
echo the prompt, which holds memory text.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, Literal, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, Field, StrictInt, WithJsonSchema, create_model
from pydantic_ai import (
    Agent,
    AgentRunError,
    ConcurrencyLimitExceeded,
    ModelAPIError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelRequestTimeout,
    ModelTimeoutError,
    NativeOutput,
    ToolOutput,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UsageLimits,
    UserError,
)
from pydantic_ai.embeddings import EmbeddingModel as PydanticAIEmbedder
from pydantic_ai.embeddings import infer_embedding_model
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage

from powercontext.config import (
    LLAMACPP_PREFIX,
    OPENAI_COMPATIBLE_PREFIX,
    InferenceConfig,
    env_name,
)
from powercontext.memory.bounds import at_least_one, positive
from powercontext.memory.errors import (
    ConfigurationError,
    InferenceError,
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidInferenceOutputError,
)
from powercontext.memory.models import (
    EmbeddingProfile,
    InferenceUsage,
    MemoryHit,
    MemoryRerankDecision,
)
from powercontext.memory.rerank.listwise import (
    LISTWISE_INSTRUCTIONS,
    OUTPUT_TOOL_NAME,
    POLICY_ID,
    build_listwise_prompt,
)

if TYPE_CHECKING:
    from powercontext.config import ServerSettings


# The only output the reranker accepts. Strict ints: "3", 3.0 or true are invalid, so the model is
# asked again rather than having its answer guessed. Extra keys are invalid too: the schema sent
# says `additionalProperties: false`, and the RFC's schema holds the ranks and nothing else.
# No docstring: pydantic-ai would send it to the model as part of the tool description.
class RankSelection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ranks: list[StrictInt] = Field(
        description=(
            "Ranks of the selected candidates, best first, each at most once; "
            "at most max_results; empty when no candidate is relevant."
        )
    )


OutputMode = Literal["tool", "native"]


@functools.lru_cache(maxsize=256)
def bounded_selection(candidate_count: int, limit: int) -> type[RankSelection]:
    """RankSelection whose JSON schema bounds the answer: ranks 1..candidate_count, at most
    `limit` of them. A server that turns the schema into a grammar (llama.cpp, Ollama, vLLM)
    then cannot emit an endless or out-of-range list, which a small model otherwise does until
    the context is full. Validation stays RankSelection's own: what a server that ignores the
    schema sends is normalized by the Memory service like any reranker's output."""
    rank = Annotated[
        StrictInt, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": candidate_count})
    ]
    description = RankSelection.model_fields["ranks"].description
    return create_model(
        "RankSelection",
        __base__=RankSelection,
        ranks=(list[rank], Field(description=description, json_schema_extra={"maxItems": limit})),
    )


def _native_max_tokens(limit: int) -> int:
    # `{"ranks": [...]}` costs about 6 tokens per rank with the whitespace a grammar allows; the
    # bound makes a server that ignores the schema fail fast instead of filling its context.
    return 32 + 12 * limit


def openai_compatible_model(
    base_url: str, model_name: str, *, api_key: str | None = None, name: str = "openai-compatible"
) -> Model:
    """A chat model on any OpenAI-compatible server (llama.cpp, Ollama, vLLM) at `base_url`."""
    # Local servers ignore the key, but the OpenAI SDK refuses to send a request without one.
    provider = OpenAICompatibleProvider(name, base_url=base_url, api_key=api_key or "unused")
    return OpenAIChatModel(model_name, provider=provider)


def _run_usage(usage: RunUsage) -> InferenceUsage:
    # RunUsage reports 0 for tokens a provider never sent; a real request always has input
    # tokens, so all-zero token counts mean "not reported", which the portable usage says as None.
    reported = usage.input_tokens > 0 or usage.output_tokens > 0
    return InferenceUsage(
        requests=usage.requests,
        input_tokens=usage.input_tokens if reported else None,
        output_tokens=usage.output_tokens if reported else None,
    )


# llama.cpp's error type, and OpenAI's (and vLLM's) error code, for a prompt longer than the
# model's context. pydantic-ai categorizes only the latter.
_CONTEXT_OVERFLOW = frozenset({"exceed_context_size_error", "context_length_exceeded"})


def _context_overflow_hint(exc: ModelAPIError) -> str:
    """What to change when the provider refused a prompt too long for the model's context, else
    "". A bare "HTTP 400" sends the operator looking everywhere but the context size. Only the
    token counts of llama.cpp's error body are quoted: its message can echo the prompt."""
    if not isinstance(exc, ModelContextWindowExceededError) and not (
        exc.provider_error_type in _CONTEXT_OVERFLOW or exc.provider_error_code in _CONTEXT_OVERFLOW
    ):
        return ""
    body = exc.body if isinstance(exc, ModelHTTPError) else None
    sizes = ""
    if isinstance(body, dict):
        prompt, context = body.get("n_prompt_tokens"), body.get("n_ctx")
        if type(prompt) is int and type(context) is int:
            sizes = f" ({prompt} tokens for a context of {context})"
    return (
        f": the prompt does not fit the model's context{sizes}; raise "
        f"{env_name('inference', 'llamacpp_context_size')} (a llamacpp: model) or the server's "
        "context size, or send fewer or shorter rerank candidates "
        f"({env_name('runtime', 'memory_rerank_candidate_limit')}, "
        f"{env_name('runtime', 'memory_rerank_max_candidate_chars')})"
    )


def map_inference_error(exc: Exception, *, operation: str) -> InferenceError:
    """The fail-closed domain error for any failure raised while `operation` ran in pydantic-ai.

    Nothing of ours runs inside a pydantic-ai call (no tools, no validators), so even an
    exception of an unexpected type there means the model, provider or SDK broke; it is invalid
    output rather than a raw exception escaping. Messages name the error class and, for HTTP
    errors, the status code: never the body.
    """
    kind = type(exc).__name__
    if isinstance(exc, TimeoutError | ModelTimeoutError | ModelRequestTimeout):
        return InferenceTimeoutError(f"{operation} timed out ({kind})")
    if isinstance(exc, ModelHTTPError):
        return InferenceUnavailableError(
            f"{operation} failed: the provider answered HTTP {exc.status_code} ({kind})"
            + _context_overflow_hint(exc)
        )
    if isinstance(exc, ModelAPIError) and (
        isinstance(exc.__cause__, ValueError) or isinstance(exc, UnexpectedModelBehavior)
    ):
        # Newer pydantic-ai raises ModelInvalidResponseError (both an API error and unexpected
        # behaviour) for a body that does not decode; older ones chain the ValueError.
        # A 200 whose body does not decode (JSONDecodeError, UnicodeDecodeError): the provider
        # answered, but not with usable output.
        return InvalidInferenceOutputError(
            f"{operation} failed: the provider's response could not be decoded ({kind})"
        )
    if isinstance(exc, ModelAPIError | ConcurrencyLimitExceeded | OSError):
        hint = _context_overflow_hint(exc) if isinstance(exc, ModelAPIError) else ""
        return InferenceUnavailableError(
            f"{operation} failed: the provider is unavailable ({kind}){hint}"
        )
    if isinstance(exc, UnexpectedModelBehavior | UsageLimitExceeded):
        return InvalidInferenceOutputError(
            f"{operation} failed: the model's output was invalid ({kind})"
        )
    if isinstance(exc, AgentRunError | UserError):
        return InferenceUnavailableError(f"{operation} failed: the model cannot serve it ({kind})")
    return InvalidInferenceOutputError(f"{operation} failed unexpectedly ({kind})")


def _resolve_model(model: str | Model, source: str | None = None) -> Model:
    """`source`: where the caller set the model, for the error (default the server setting)."""
    if isinstance(model, Model):
        return model
    try:
        return infer_model(model)
    except (UserError, ValueError, ImportError) as exc:
        # UserError messages are pydantic-ai's own (unknown provider, missing API key): safe.
        raise ConfigurationError(
            f"the generation model {model!r} "
            f"({source or env_name('inference', 'generation_model')}) cannot be used: {exc}"
        ) from exc


class PydanticAIListwiseReranker:
    """The policy `powercontext.memory.rerank.listwise.v1` over any pydantic-ai chat model.

    One agent run per rerank: at most `max_requests` model requests (the first plus retries for
    invalid output), bounded as a whole by `timeout_seconds`. The provider SDK's own retries are
    off so the request bound is real and a rate limit fails fast; callers may retry the
    idempotent search. Ranks are returned exactly as the model gave them: the Memory service
    normalizes the output of every reranker the same way.
    """

    policy_id: str = POLICY_ID

    def __init__(
        self,
        model: str | Model,
        *,
        timeout_seconds: float,
        max_requests: int,
        max_candidate_chars: int = 1200,
        output_mode: OutputMode = "tool",
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.timeout_seconds = positive("timeout_seconds", timeout_seconds)
        self.max_requests = at_least_one("max_requests", max_requests)
        self.output_mode = output_mode
        self._on_close = on_close
        self.max_candidate_chars = max_candidate_chars
        self.model = _resolve_model(model)
        self._usage_limits = UsageLimits(request_limit=max_requests)
        self._agent: Agent[None, RankSelection] = Agent(
            self.model,
            output_type=ToolOutput(
                RankSelection,
                name=OUTPUT_TOOL_NAME,
                description="Submit the ranks of the selected candidates, best first.",
            ),
            instructions=LISTWISE_INSTRUCTIONS,
            model_settings=ModelSettings(temperature=0.0, timeout=timeout_seconds, max_retries=0),
            retries={"output": max_requests - 1, "tools": 0},
            name="powercontext-listwise-rerank",
        )

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        if not candidates:
            return MemoryRerankDecision(selected_ranks=())
        prompt = build_listwise_prompt(query, candidates, limit, self.max_candidate_chars)
        try:
            async with asyncio.timeout(self.timeout_seconds):
                if self.output_mode == "native":
                    result = await self._agent.run(
                        prompt.text,
                        usage_limits=self._usage_limits,
                        output_type=NativeOutput(
                            bounded_selection(len(candidates), limit),
                            name=OUTPUT_TOOL_NAME,
                            strict=True,
                        ),
                        model_settings=ModelSettings(max_tokens=_native_max_tokens(limit)),
                    )
                else:
                    result = await self._agent.run(prompt.text, usage_limits=self._usage_limits)
        except Exception as exc:
            raise map_inference_error(exc, operation="memory rerank") from exc
        return MemoryRerankDecision(
            selected_ranks=tuple(result.output.ranks),
            usage=_run_usage(result.usage),
            truncated_ranks=prompt.truncated_ranks,
        )

    async def aclose(self) -> None:
        """Release what the runtime started for this reranker (a local llama.cpp server)."""
        close, self._on_close = self._on_close, None
        if close is not None:
            close()


def generation_model(
    spec: str, inference: InferenceConfig, *, local_base_url: str | None = None
) -> str | Model:
    """The chat model a `GENERATION_MODEL` spec names, for the reranker and for the LoCoMo
    harness's answers and judge alike: `openai-compatible:NAME` at GENERATION_BASE_URL, a
    `llamacpp:` file served at `local_base_url`, else pydantic-ai's own `provider:name`."""
    if local_base_url is not None:
        # llama.cpp serves one model whatever the name; the file name makes its logs readable.
        name = Path(spec.removeprefix(LLAMACPP_PREFIX).strip()).name
        return openai_compatible_model(local_base_url, name, name="llamacpp")
    if spec.startswith(OPENAI_COMPATIBLE_PREFIX) and inference.generation_base_url:
        key = inference.generation_api_key
        return openai_compatible_model(
            inference.generation_base_url,
            spec.removeprefix(OPENAI_COMPATIBLE_PREFIX).strip(),
            api_key=key.get_secret_value() if key is not None else None,
        )
    return spec


def build_generation_reranker(
    settings: ServerSettings,
    *,
    local_base_url: str | None = None,
    on_close: Callable[[], None] | None = None,
) -> PydanticAIListwiseReranker:
    """The built-in reranker from `POWERCONTEXT_SERVER_INFERENCE_GENERATION_*` settings.

    `local_base_url` is the API root of the llama.cpp server the runtime started for a
    `llamacpp:` model; `on_close` stops it when the reranker is closed.
    """
    inference = settings.inference
    spec = inference.generation_model
    if spec is None:
        raise ConfigurationError(
            f"the listwise reranker needs {env_name('inference', 'generation_model')} "
            "(a pydantic-ai provider:model-name string)"
        )
    model = generation_model(spec, inference, local_base_url=local_base_url)
    mode = inference.generation_output_mode
    if mode == "auto":
        mode = "tool" if isinstance(model, str) else "native"
    return PydanticAIListwiseReranker(
        model,
        timeout_seconds=inference.generation_timeout_seconds,
        max_requests=inference.generation_max_requests,
        max_candidate_chars=settings.runtime.memory_rerank_max_candidate_chars,
        output_mode=mode,
        on_close=on_close,
    )


KNOWN_EMBEDDING_DIMENSIONS: Final[dict[str, int]] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""Native dimensions of common models, so their profile is known without a probe request."""


async def generate_text(
    model: str | Model,
    *,
    system: str,
    prompt: str,
    timeout_seconds: float,
    max_requests: int,
) -> str:
    """One plain-text generation at temperature 0, with the reranker's fail-closed errors.

    For evaluation code (answers, judges) that must not import pydantic-ai itself.
    """
    agent: Agent[None, str] = Agent(
        _resolve_model(model, "the evaluation's model option, e.g. --answer-model / --judge-model"),
        instructions=system,
        model_settings=ModelSettings(temperature=0.0, timeout=timeout_seconds, max_retries=0),
        name="powercontext-text",
    )
    try:
        async with asyncio.timeout(timeout_seconds):
            result = await agent.run(prompt, usage_limits=UsageLimits(request_limit=max_requests))
    except Exception as exc:
        raise map_inference_error(exc, operation="text generation") from exc
    return result.output


_EMBED_TIMEOUT = 60.0


class EmbeddingOptions(TypedDict, total=False):
    dimension: int | None
    """The vector size; None (the default) for a model in the table of known ones."""
    timeout_seconds: float
    """Per embedding request; 60 by default."""


class PydanticAIEmbeddingModel:
    """An EmbeddingModel over pydantic-ai's embeddings API (`openai:`, `ollama:`, `cohere:`...).

    The profile id is the spec string (for an injected pydantic-ai model, `system:model_name`):
    a different model is a different vector space. The profile must be known before the first
    vector is stored, so the dimension comes from `dimension`, else from the table of known
    models; for any other model use `await PydanticAIEmbeddingModel.open(spec)`, which asks the
    model once. Every later response is checked against that dimension.
    """

    def __init__(self, spec: str | PydanticAIEmbedder, **options: Unpack[EmbeddingOptions]) -> None:
        model, profile_id, dimension = _resolve_embedder(spec, options.get("dimension"))
        if dimension is None:
            raise ConfigurationError(
                f"the dimension of embedding model {profile_id!r} is unknown: pass dimension= "
                "or open it with `await PydanticAIEmbeddingModel.open(...)`, which probes it"
            )
        self._setup(model, profile_id, dimension, options.get("timeout_seconds", _EMBED_TIMEOUT))

    def _setup(
        self, model: PydanticAIEmbedder, profile_id: str, dimension: int, timeout_seconds: float
    ) -> None:
        positive("timeout_seconds", timeout_seconds)
        try:
            self.profile = EmbeddingProfile(profile_id=profile_id, dimension=dimension)
        except ValueError as exc:
            raise ConfigurationError(f"embedding model {profile_id!r}: {exc}") from exc
        self.model = model
        self.timeout_seconds = timeout_seconds

    @classmethod
    async def open(
        cls, spec: str | PydanticAIEmbedder, **options: Unpack[EmbeddingOptions]
    ) -> PydanticAIEmbeddingModel:
        """Like the constructor, but learns an unknown dimension with one probe request."""
        model, profile_id, dimension = _resolve_embedder(spec, options.get("dimension"))
        timeout_seconds = options.get("timeout_seconds", _EMBED_TIMEOUT)
        if dimension is None:
            operation = f"probing embedding model {profile_id!r}"
            vectors = await _embed_bounded(
                model, ["dimension probe"], "document", timeout_seconds, operation
            )
            if len(vectors) != 1 or not vectors[0]:
                raise InvalidInferenceOutputError(f"{operation} returned no vector")
            dimension = len(vectors[0])
        instance = cls.__new__(cls)
        instance._setup(model, profile_id, dimension, timeout_seconds)
        return instance

    async def embed_documents(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return await self._embed(list(texts), "document")

    async def embed_query(self, text: str) -> Sequence[float]:
        return (await self._embed([text], "query"))[0]

    async def embed_queries(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return await self._embed(list(texts), "query")

    async def _embed(
        self, texts: list[str], input_type: Literal["query", "document"]
    ) -> Sequence[Sequence[float]]:
        if not texts:
            return []
        operation = f"embedding with {self.profile.profile_id!r}"
        vectors = await _embed_bounded(
            self.model, texts, input_type, self.timeout_seconds, operation
        )
        if len(vectors) != len(texts):
            raise InvalidInferenceOutputError(
                f"{operation} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        for vector in vectors:
            if len(vector) != self.profile.dimension:
                raise InvalidInferenceOutputError(
                    f"{operation} returned {len(vector)}-dimensional vectors; the profile says "
                    f"{self.profile.dimension}"
                )
        return vectors


def _resolve_embedder(
    spec: str | PydanticAIEmbedder, dimension: int | None
) -> tuple[PydanticAIEmbedder, str, int | None]:
    """The model, its profile id, and its dimension: the one given, else the known one."""
    if not isinstance(spec, str):
        model, profile_id = spec, f"{spec.system}:{spec.model_name}"
    else:
        try:
            model, profile_id = infer_embedding_model(spec), spec
        except (UserError, ValueError, ImportError) as exc:
            raise ConfigurationError(
                f"{env_name('inference', 'embedding_model')}={spec!r} cannot be used: {exc}"
            ) from exc
    if dimension is None:
        dimension = KNOWN_EMBEDDING_DIMENSIONS.get(model.model_name)
    return model, profile_id, dimension


async def _embed_bounded(
    model: PydanticAIEmbedder,
    texts: list[str],
    input_type: Literal["query", "document"],
    timeout_seconds: float,
    operation: str,
) -> Sequence[Sequence[float]]:
    try:
        async with asyncio.timeout(timeout_seconds):
            result = await model.embed(texts, input_type=input_type)
    except Exception as exc:
        raise map_inference_error(exc, operation=operation) from exc
    return result.embeddings
