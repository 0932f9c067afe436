"""`powercontext reindex`, `config show`, `server openapi`, `server run` refusals, `bench`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from powercontext.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


def test_reindex_embeds_what_was_written_without_a_model(tmp_path: Path) -> None:
    db = {"POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}"}
    without = db | {"POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "none"}
    for scope, text in (("a", "first text"), ("a", "second text"), ("b", "third text")):
        result = runner.invoke(
            app, ["memory", "remember", text, "--scope", scope, "--local"], env=without
        )
        assert result.exit_code == 0, result.output

    refused = runner.invoke(app, ["reindex"], env=without)
    assert refused.exit_code == 1 and "capability_not_supported" in refused.stderr

    hashed = db | {"POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash"}
    result = runner.invoke(app, ["reindex", "--json"], env=hashed)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"a": 2, "b": 1}
    again = runner.invoke(app, ["reindex"], env=hashed)
    assert again.exit_code == 0 and "embedded 0 entries in 2 scopes" in again.stdout
    vector = runner.invoke(
        app,
        ["memory", "search", "third", "--scope", "b", "--mode", "vector", "--local", "--json"],
        env=hashed,
    )
    assert json.loads(vector.stdout)["hits"][0]["text"] == "third text"


def test_config_show_masks_secrets(tmp_path: Path) -> None:
    env = {
        "POWERCONTEXT_SERVER_HTTP_API_KEYS": json.dumps({"super-secret-key-1": ["*"]}),
        "POWERCONTEXT_SERVER_DATABASE_URL": "postgresql://pc:hunter2pass@db.internal:5432/pc",
        "POWERCONTEXT_CLIENT_API_KEY": "client-secret-key",
        "POWERCONTEXT_SERVER_HTTP_PORT": "9123",
    }
    result = runner.invoke(app, ["config", "show", "--json"], env=env)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["POWERCONTEXT_SERVER_HTTP_PORT"] == 9123
    assert shown["POWERCONTEXT_SERVER_HTTP_API_KEYS"] == "********"
    assert (
        shown["POWERCONTEXT_SERVER_DATABASE_URL"] == "postgresql://pc:********@db.internal:5432/pc"
    )
    assert shown["POWERCONTEXT_CLIENT_API_KEY"] == "********"
    table = runner.invoke(app, ["config", "show"], env=env)
    assert "POWERCONTEXT_SERVER_RUNTIME_*" in table.stdout
    assert "MEMORY_RERANK_ENABLED" in table.stdout
    for secret in ("super-secret-key-1", "hunter2pass", "client-secret-key"):
        assert secret not in result.output and secret not in table.output


def test_server_openapi_prints_the_committed_contract() -> None:
    result = runner.invoke(app, ["server", "openapi"])
    assert result.exit_code == 0, result.output
    committed = yaml.safe_load((REPO / "openapi" / "powercontext.yaml").read_text("utf-8"))
    assert yaml.safe_load(result.stdout) == committed


def test_server_run_refuses_a_public_bind_without_auth(tmp_path: Path) -> None:
    env = {"POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 's.db'}"}
    result = runner.invoke(app, ["server", "run", "--host", "0.0.0.0", "--port", "0"], env=env)
    assert result.exit_code == 2
    assert "ALLOW_UNAUTHENTICATED_PUBLIC_BIND" in result.stderr
    assert not (tmp_path / "s.db").exists()  # refused before anything was opened


def test_version_and_bench_mount() -> None:
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.startswith("powercontext ")
    bench = runner.invoke(app, ["bench", "--help"])
    assert bench.exit_code == 0 and "locomo" in bench.stdout
