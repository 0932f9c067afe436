"""The CLI against an embedded store, for CliRunner tests: a fresh SQLite file and the offline
`hash` embedder, every command run with --local."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from powercontext.cli import app

runner = CliRunner()


def local_env(folder: Path) -> dict[str, str]:
    return {
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{folder / 'cli.db'}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
    }


def run_json(env: dict[str, str], *args: str) -> Any:
    """A command's --json answer; it must succeed."""
    result = runner.invoke(app, [*args, "--local", "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
