"""Small wording and round-trip fixes found by the first-run audit: `config show` prints a
mapping setting as the JSON its variable takes; errors name where the model was set and use
the right verb form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from powercontext.cli import app
from powercontext.inference import pydantic_ai
from powercontext.inference.embeddings.packaged_files import _missing_extra_error
from powercontext.memory.errors import ConfigurationError
from tests.unit.cli_local import local_env

runner = CliRunner()
BY_CLASS = "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMITS_BY_CLASS"


def test_config_show_prints_a_mapping_as_json_that_pastes_back() -> None:
    limits = {"one_fact": 15, "list": 25, "count": 20, "time": 10, "comparison": 20}
    result = runner.invoke(app, ["config", "show", "--json"], env={BY_CLASS: json.dumps(limits)})
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)[BY_CLASS]
    assert json.loads(shown) == limits
    again = runner.invoke(app, ["config", "show", "--json"], env={BY_CLASS: shown})
    assert again.exit_code == 0 and json.loads(json.loads(again.stdout)[BY_CLASS]) == limits


def test_the_missing_extra_error_agrees_in_number() -> None:
    assert "onnxruntime is not installed" in str(_missing_extra_error(["onnxruntime"]))
    both = str(_missing_extra_error(["onnxruntime", "tokenizers"]))
    assert "onnxruntime, tokenizers are not installed" in both


def test_the_server_setting_is_named_without_the_evaluation_flags() -> None:
    with pytest.raises(ConfigurationError) as caught:
        pydantic_ai._resolve_model("no-such-provider:model")
    assert "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL" in str(caught.value)
    assert "--answer-model" not in str(caught.value)


async def test_the_evaluation_path_names_its_own_option() -> None:
    with pytest.raises(ConfigurationError, match="--answer-model"):
        await pydantic_ai.generate_text(
            "no-such-provider:model", system="s", prompt="p", timeout_seconds=5, max_requests=1
        )


def test_search_batch_reads_a_file_with_a_bom(tmp_path: Path) -> None:
    env = local_env(tmp_path)
    wrote = runner.invoke(
        app, ["memory", "remember", "We deploy on Fridays.", "-s", "p", "--local"], env=env
    )
    assert wrote.exit_code == 0, wrote.output
    queries = tmp_path / "q.txt"
    queries.write_bytes("\ufeffdeploy\nfridays\n".encode())
    result = runner.invoke(
        app, ["memory", "search-batch", str(queries), "-s", "p", "--local", "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    pages = json.loads(result.stdout)["pages"]
    assert [page["query"] for page in pages] == ["deploy", "fridays"]
