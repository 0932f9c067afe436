"""The server loads a file-backed embedder (the local MiniLM) in the background at startup:
its files are verified by sha256 then, so a broken install is one error line right away
instead of a surprise at the first vector search, and a good one is loaded before it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.inference.embeddings import LocalMiniLM, packaged_minilm_files
from powercontext.runtime import open_runtime
from powercontext.server import create_app
from tests.http.live import live_server


def _settings(db: Path) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="none"),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=0),
    )


def _serve_until(model: LocalMiniLM, db: Path, done: Callable[[], bool]) -> None:
    def factory(settings: ServerSettings, observer: object) -> object:
        return open_runtime(settings, embedding_model=model, search_observer=observer)  # type: ignore[arg-type]

    app = create_app(_settings(db), runtime_factory=factory)  # type: ignore[arg-type]
    with live_server(app):
        deadline = time.monotonic() + 60
        while not done() and time.monotonic() < deadline:
            time.sleep(0.05)


def test_a_good_model_is_loaded_before_any_search(tmp_path: Path) -> None:
    model = LocalMiniLM()
    _serve_until(model, tmp_path / "m.db", lambda: model.loaded)
    assert model.loaded


def test_a_model_file_that_fails_its_check_is_one_error_line_at_startup(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = replace(packaged_minilm_files(), model_sha256="0" * 64)
    model = LocalMiniLM(broken)
    with caplog.at_level(logging.INFO, logger="powercontext.startup"):
        _serve_until(
            model,
            tmp_path / "m.db",
            lambda: any(r.levelno == logging.ERROR for r in caplog.records),
        )
    assert not model.loaded
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in caplog.records]
    line = errors[0].getMessage()
    assert line.startswith(f"the embedding model {model.profile.profile_id} cannot be used (")
    assert "ConfigurationError" in line and "sha256" in line
    assert errors[0].exc_info is None  # one line, no traceback
