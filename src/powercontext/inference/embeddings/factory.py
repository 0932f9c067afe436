"""Builds the embedding model that POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL names.

`none`, `auto`, `local:all-minilm-l6-v2`, `hash` / `hash:<dimension>`, or any pydantic-ai
embedding model string `provider:model-name`. Building is cheap: nothing is loaded or hashed
until the first embedding call.
"""

from __future__ import annotations

import importlib
import re
from typing import cast

from powercontext.inference.embeddings.hashing import DEFAULT_DIMENSION, HashingEmbedder
from powercontext.inference.embeddings.local import LocalMiniLM
from powercontext.inference.embeddings.packaged_files import (
    EMBEDDING_MODEL_VARIABLE,
    local_extra_available,
)
from powercontext.memory.errors import ConfigurationError
from powercontext.memory.ports import EmbeddingModel

LOCAL_MINILM = "local:all-minilm-l6-v2"
_PYDANTIC_AI_MODULE = "powercontext.inference.pydantic_ai"
_PROVIDER_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*:\S+")
_FORMS = f"none, auto, {LOCAL_MINILM}, hash, hash:<dimension>, or provider:model-name"


def _invalid(spec: str, why: str) -> ConfigurationError:
    return ConfigurationError(f"{EMBEDDING_MODEL_VARIABLE}={spec!r} is invalid: {why}")


def _hashing(spec: str, suffix: str | None) -> HashingEmbedder:
    if suffix is None:
        return HashingEmbedder(DEFAULT_DIMENSION)
    if not suffix.isdigit():
        raise _invalid(spec, "hash:<dimension> needs a positive integer dimension")
    try:
        return HashingEmbedder(int(suffix))
    except ValueError as exc:
        raise _invalid(spec, str(exc)) from exc


def _pydantic_ai(spec: str) -> EmbeddingModel:
    try:
        module = importlib.import_module(_PYDANTIC_AI_MODULE)
    except ModuleNotFoundError as exc:
        raise _invalid(
            spec, f"provider embedding models need {exc.name or _PYDANTIC_AI_MODULE}"
        ) from exc
    return cast(EmbeddingModel, module.PydanticAIEmbeddingModel(spec))


def build_embedding_model(spec: str) -> EmbeddingModel | None:
    """The embedding model for `spec`, or None for `none` (and for `auto` without the
    `local` extra). Raises ConfigurationError naming the variable for an unknown form."""
    text = spec.strip()
    lowered = text.lower()
    if lowered == "none":
        return None
    if lowered == "auto":
        return LocalMiniLM() if local_extra_available() else None
    if lowered == LOCAL_MINILM:
        return LocalMiniLM()
    if lowered.startswith("local:"):
        raise _invalid(spec, f"the only local model is {LOCAL_MINILM}")
    if lowered == "hash" or lowered.startswith("hash:"):
        return _hashing(spec, text.partition(":")[2] if ":" in text else None)
    if _PROVIDER_MODEL.fullmatch(text):
        return _pydantic_ai(text)
    raise _invalid(spec, f"use one of {_FORMS}")
