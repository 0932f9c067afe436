"""Embedding adapters implementing `powercontext.memory.ports.EmbeddingModel`.

- `LocalMiniLM`: offline all-MiniLM-L6-v2 (int8 ONNX, Apache-2.0) from the `local` extra.
- `HashingEmbedder`: lexical feature hashing, for tests, large benchmarks and air-gapped runs.
- `build_embedding_model(spec)`: the model POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL names.
"""

from powercontext.inference.embeddings.factory import LOCAL_MINILM, build_embedding_model
from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.inference.embeddings.local import LocalMiniLM
from powercontext.inference.embeddings.packaged_files import (
    ModelFiles,
    local_extra_available,
    packaged_minilm_files,
)

__all__ = [
    "LOCAL_MINILM",
    "HashingEmbedder",
    "LocalMiniLM",
    "ModelFiles",
    "build_embedding_model",
    "local_extra_available",
    "packaged_minilm_files",
]
