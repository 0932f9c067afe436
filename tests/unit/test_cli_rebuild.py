"""`powercontext reindex --rebuild`: re-derives the index under the current settings."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from powercontext.cli import app

runner = CliRunner()


def test_rebuild_reindexes_every_entry_and_clears_the_stale_profile(tmp_path: Path) -> None:
    env = {
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
    }
    old = env | {"POWERCONTEXT_SERVER_RUNTIME_INDEX_CONTEXT_BEFORE": "0"}
    for text in ("we went camping", "the lake was cold", "next time wetsuits"):
        written = runner.invoke(
            app,
            [
                "memory",
                "remember",
                text,
                "--scope",
                "a",
                "--local",
                "--thread",
                "trip",
                "--occurred-at",
                "2023-05-08T10:00:00Z",
            ],
            env=old,
        )
        assert written.exit_code == 0, written.output

    def search(query: str) -> list[str]:
        found = runner.invoke(
            app,
            ["memory", "search", query, "--scope", "a", "--mode", "fts", "--local", "--json"],
            env=env,
        )
        assert found.exit_code == 0, found.output
        return sorted(hit["text"] for hit in json.loads(found.stdout)["hits"])

    # written with no neighbours before: "camping" is found only in its own turn
    assert search("camping") == ["we went camping"]
    rebuilt = runner.invoke(app, ["reindex", "--rebuild", "--json"], env=env)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert json.loads(rebuilt.stdout) == {"a": 3}
    assert search("camping") == ["next time wetsuits", "the lake was cold", "we went camping"]
    again = runner.invoke(app, ["reindex", "--rebuild"], env=env)
    assert again.exit_code == 0 and "re-indexed 3 entries in 1 scope\n" in again.stdout
    bad = runner.invoke(
        app,
        ["memory", "remember", "x", "--scope", "a", "--local", "--occurred-at", "soon"],
        env=env,
    )
    assert bad.exit_code != 0 and "--occurred-at" in bad.output + bad.stderr
