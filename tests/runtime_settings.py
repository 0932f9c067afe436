"""Settings of an in-process runtime on a SQLite file in a test's directory."""

from __future__ import annotations

from pathlib import Path

from powercontext import ServerSettings
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig


def sqlite_settings(tmp_path: Path, embedding: str) -> ServerSettings:
    """A store in `tmp_path`, the named embedder, and no background backfill (a test that
    wants vectors filled asks for them)."""
    return sqlite_file_settings(tmp_path / "memory.db", embedding)


def sqlite_file_settings(db: Path, embedding: str = "hash") -> ServerSettings:
    """The same on the SQLite file `db`."""
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model=embedding),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=0),
    )
