"""The one seam through which the harness asks a model for text (answers and judge verdicts).

Anything matching `TextGenerator` works, which keeps the harness testable without a provider.
The default adapter delegates to `powercontext.inference.pydantic_ai`, the only module of the
project that imports pydantic-ai.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from powercontext.config import InferenceConfig


class TextGenerator(Protocol):
    async def __call__(self, system: str, prompt: str) -> str:
        """Return the model's plain-text reply to one system + user message pair."""
        ...


class GenerationUnavailableError(RuntimeError):
    """No generation model is configured, or the inference adapter lacks a text helper."""


_HELPER_MODULE = "powercontext.inference.pydantic_ai"
_HELPER_NAME = "generate_text"


class InferenceTextGenerator:
    """Plain text generation through the project's inference adapter, temperature 0.

    Expects `generate_text(model, *, system, prompt, timeout_seconds, max_requests) -> str`
    (awaitable) in `powercontext.inference.pydantic_ai`.
    """

    def __init__(self, model: str, inference: InferenceConfig) -> None:
        self.model = model
        self._inference = inference
        self._timeout = inference.generation_timeout_seconds
        self._max_requests = inference.generation_max_requests
        self._helper: Any = None

    def _resolve(self) -> Any:
        if self._helper is None:
            module = importlib.import_module(_HELPER_MODULE)
            helper = getattr(module, _HELPER_NAME, None)
            if helper is None:
                raise GenerationUnavailableError(
                    f"{_HELPER_MODULE} has no `{_HELPER_NAME}` helper; answer generation and "
                    "the LLM judge need it"
                )
            self._helper = helper
        return self._helper

    async def __call__(self, system: str, prompt: str) -> str:
        # The spec as the reranker reads it (`openai-compatible:` at GENERATION_BASE_URL too).
        model = importlib.import_module(_HELPER_MODULE).generation_model(
            self.model, self._inference
        )
        reply = await self._resolve()(
            model,
            system=system,
            prompt=prompt,
            timeout_seconds=self._timeout,
            max_requests=self._max_requests,
        )
        return str(reply)


def default_generator(model: str | None, inference: InferenceConfig) -> InferenceTextGenerator:
    chosen = model or inference.generation_model
    if not chosen:
        raise GenerationUnavailableError(
            "answers and the LLM judge need a generation model: set "
            "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL (or pass --answer-model/--judge-model)"
        )
    return InferenceTextGenerator(chosen, inference)
