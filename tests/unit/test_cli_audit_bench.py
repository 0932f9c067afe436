"""`powercontext bench locomo` through the root command, as the docs run it: both write
modes end to end on the small fixture, its help, and a bad --out in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext.cli import app
from tests.unit.cli_local import runner

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "tiny.json"
ENV = {"POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash"}


def _run(out: Path, *flags: str) -> dict[str, object]:
    args = ["bench", "locomo", "--data", str(FIXTURE), "--out", str(out), "--no-progress"]
    result = runner.invoke(app, [*args, *flags], env=ENV)
    assert result.exit_code == 0, result.output
    assert "coarse pool R@30" in result.stdout
    results: dict[str, object] = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return results


def test_both_write_modes_run_and_index_alike(tmp_path: Path) -> None:
    turns = _run(tmp_path / "turns", "--write", "turns")
    batch = _run(tmp_path / "batch", "--write", "batch")
    for results, mode in ((turns, "turns"), (batch, "batch")):
        assert results["config"]["write"] == mode  # type: ignore[index]
        ingest = results["ingest"]
        assert {k: v["entries"] for k, v in ingest.items()} == {"conv-a": 6, "conv-b": 6}  # type: ignore[attr-defined]
    # Contextual indexing covers one call at a time and a batch alike (README, issue 17).
    assert turns["retrieval"] == batch["retrieval"]


def test_the_help_offers_no_second_completion_install() -> None:
    result = runner.invoke(app, ["bench", "locomo", "--help"])
    assert result.exit_code == 0
    assert "--data" in result.stdout and "--write" in result.stdout
    assert "completion" not in result.stdout


@pytest.mark.parametrize("below", ["results", "results/sub"])
def test_an_out_directory_that_cannot_be_made_is_one_line(tmp_path: Path, below: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / below
    result = runner.invoke(
        app, ["bench", "locomo", "--data", str(FIXTURE), "--out", str(out)], env=ENV
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error file_error: "), result.stderr
    assert str(blocker) in lines[0]


def test_the_results_never_hold_a_password_of_a_url_setting(tmp_path: Path) -> None:
    secret = "pw-secret-9f3"
    env = ENV | {
        "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENDPOINT_URL": f"http://u:{secret}@x/rerank"
    }
    out = tmp_path / "out"
    args = ["bench", "locomo", "--data", str(FIXTURE), "--out", str(out), "--no-progress"]
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    written = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert "results.json" in written
    assert not [name for name, data in written.items() if secret.encode() in data]
    runtime = json.loads(written["results.json"])["environment"]["runtime"]
    assert runtime["memory_rerank_endpoint_url"] == "http://u:********@x/rerank"
