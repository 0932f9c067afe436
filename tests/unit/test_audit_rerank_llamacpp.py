"""`llamacpp:` model paths that name no loadable file: one clear line naming the variable.

Found by the rerank conformance audit: a directory (a common slip: the folder of the model
instead of its file) was reported as "does not exist", although it does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.inference.llamacpp import model_path
from powercontext.memory.errors import ConfigurationError

VARIABLE = "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL"


def test_a_directory_is_named_as_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        model_path(f"llamacpp:{tmp_path}")
    message = str(caught.value)
    assert message.startswith(f"{VARIABLE}: ")
    assert "is a directory" in message and "does not exist" not in message
    assert str(tmp_path) in message


def test_a_missing_file_is_named_missing(tmp_path: Path) -> None:
    missing = tmp_path / "model.gguf"
    with pytest.raises(ConfigurationError, match="does not exist") as caught:
        model_path(f"llamacpp:{missing}")
    assert str(caught.value).startswith(f"{VARIABLE}: ")


def test_an_existing_file_is_returned(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    assert model_path(f"llamacpp: {model} ") == model


def test_the_settings_check_names_a_directory_too(tmp_path: Path) -> None:
    # `server run` validates the settings before any adapter sees the path.
    from pydantic import ValidationError

    from powercontext.config import InferenceConfig

    with pytest.raises(ValidationError) as caught:
        InferenceConfig(generation_model=f"llamacpp:{tmp_path}")
    assert "is a directory" in str(caught.value)
    assert "does not exist" not in str(caught.value)
