"""A bad configuration at `powercontext server run`, as an operator meets it: one line on
stderr naming the variable to fix (and `.env` when it was set there), exit code 2, never a
pydantic dump or a traceback; a POWERCONTEXT_SERVER_ name that is no setting fails the same
way, naming the closest real one.

`--host 0.0.0.0` without keys makes a configuration that passes end in the public-bind refusal
(also exit 2, before binding), so a test of a check that is missing fails instead of serving.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from powercontext.cli import app

runner = CliRunner()
PUBLIC_BIND_REFUSAL = "refusing to bind"


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in os.environ:
        if name.upper().startswith("POWERCONTEXT_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no .env but the test's own
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL", "none")


def _run_server(env: dict[str, str]) -> str:
    """stderr of a `server run` that must fail on its configuration, checked for its form."""
    result = runner.invoke(app, ["server", "run", "--host", "0.0.0.0", "--port", "0"], env=env)
    error = result.stderr
    assert PUBLIC_BIND_REFUSAL not in error, f"the configuration was accepted: {env}"
    assert result.exit_code == 2, (result.exit_code, error, result.exception)
    assert len(error.strip().splitlines()) == 1, error
    assert error.startswith("error configuration_error: invalid configuration: "), error
    for noise in ("Traceback", "Value error", "Extra inputs", "pydantic", "validation error"):
        assert noise not in error, error
    return error


S = "POWERCONTEXT_SERVER_"
BAD_VALUES = [
    (f"{S}HTTP_PORT", "abc", "valid integer"),
    (f"{S}HTTP_PORT", "70000", "less than or equal to 65535"),
    (f"{S}RUNTIME_MEMORY_RERANK_PROVIDER", "cohere", "'llm' or 'endpoint'"),
    (f"{S}RUNTIME_MEMORY_RERANK_ENABLED", "maybe", "valid boolean"),
    (f"{S}LOG_FORMAT", "xml", "'json' or 'text'"),
    (f"{S}HTTP_API_KEYS", '{"key-abcdefgh": ["a"]', "not valid JSON"),
    (f"{S}HTTP_API_KEYS", '["key-abcdefgh"]', "JSON object"),
    (f"{S}RUNTIME_MEMORY_RERANK_CANDIDATE_LIMITS_BY_CLASS", "{list: 5}", "not valid JSON"),
    (f"{S}RUNTIME_MEMORY_RERANK_CANDIDATE_LIMITS_BY_CLASS", '{"lists": 5}', "unknown query"),
    (f"{S}DATABASE_URL", "mysql://u:pw@h/db", "sqlite:///PATH"),
]


@pytest.mark.parametrize(("name", "value", "says"), BAD_VALUES)
def test_a_bad_value_is_one_line_naming_the_variable(name: str, value: str, says: str) -> None:
    error = _run_server({name: value})
    assert f"{name}: " in error and says in error, error


TYPOS = [
    (f"{S}HTTPS_PORT", f"{S}HTTP_PORT"),  # not under any group: pydantic-settings ignored it
    (f"{S}LOGFORMAT", f"{S}LOG_FORMAT"),
    (f"{S}HTTP_PROT", f"{S}HTTP_PORT"),  # under a group: "Extra inputs are not permitted"
    (f"{S}RUNTIME_MEMORY_RERANK_ENABLD", f"{S}RUNTIME_MEMORY_RERANK_ENABLED"),
    ("powercontext_server_http_api_key", f"{S}HTTP_API_KEYS"),  # names match in any case
    (f"{S}HTTP__PORT", f"{S}HTTP_PORT"),  # no `__` form: groups join with one `_`
]


@pytest.mark.parametrize(("name", "meant"), TYPOS)
def test_an_unknown_variable_fails_naming_the_closest_setting(name: str, meant: str) -> None:
    error = _run_server({name: "9000"})
    assert f"{name.upper()}: no such setting; did you mean {meant}?" in error, error


def test_an_unknown_variable_like_no_setting_points_to_config_show() -> None:
    error = _run_server({f"{S}URL": "http://127.0.0.1:8000"})
    assert f"{S}URL: no such setting" in error and "powercontext config show" in error


def test_every_problem_is_on_the_one_line() -> None:
    error = _run_server({f"{S}HTTP_PROT": "1", f"{S}HTTP_PORT": "x", f"{S}UI_ENABLED": "?"})
    for name in ("HTTP_PROT", "HTTP_PORT", "UI_ENABLED"):
        assert f"{S}{name}" in error, error


def test_a_check_across_settings_names_the_real_variables() -> None:
    error = _run_server({f"{S}INFERENCE_GENERATION_MODEL": "openai-compatible:m"})
    # Not the group's prefix as if it were a variable.
    assert f"{S}INFERENCE:" not in error
    assert f"needs {S}INFERENCE_GENERATION_BASE_URL" in error


def test_a_bad_api_keys_value_is_never_echoed() -> None:
    key = "k-SECRET-never-shown-1234"
    for value in (f'{{"{key}": ["a"]', f'{{"{key}" ["a"]}}', f'["{key}"]'):
        assert key not in _run_server({f"{S}HTTP_API_KEYS": value})


def test_dotenv_problems_say_so(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        f"{S}HTTP_PORT=abc\n{S}HTTPS_PORT=1\n{S}RUNTIME_MEMORY_RERANK_CANDIDATE_LIMITS_BY_CLASS=x\n"
    )
    error = _run_server({})
    assert f"{S}HTTPS_PORT (in .env): no such setting; did you mean {S}HTTP_PORT?" in error
    assert f"{S}RUNTIME_MEMORY_RERANK_CANDIDATE_LIMITS_BY_CLASS (in .env): not valid JSON" in error
    (tmp_path / ".env").write_text(f"{S}HTTP_PORT=abc\n")
    assert f"{S}HTTP_PORT (in .env): Input should be a valid integer" in _run_server({})


def test_environment_wins_over_dotenv_and_blank_optional_numbers_are_unset(
    tmp_path: Path,
) -> None:
    (tmp_path / ".env").write_text(f"{S}HTTP_PORT=abc\n{S}RUNTIME_SEARCH_RRF_K=7\n")
    env = {
        f"{S}HTTP_PORT": "8123",
        f"{S}RUNTIME_MEMORY_RERANK_TIMEOUT_SECONDS": "",
        f"{S}HTTP_AUTH_ENABLED": " ",
        f"{S}INFERENCE_LLAMACPP_THREADS": "",
    }
    result = runner.invoke(app, ["config", "show", "--json"], env=env)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown[f"{S}HTTP_PORT"] == 8123 and shown[f"{S}RUNTIME_SEARCH_RRF_K"] == 7
    assert shown[f"{S}RUNTIME_MEMORY_RERANK_TIMEOUT_SECONDS"] is None
    assert shown[f"{S}HTTP_AUTH_ENABLED"] is None
    # A blank where a value is required stays an error (a blank key list never means no keys).
    assert "valid integer" in _run_server({f"{S}HTTP_MAX_BODY_BYTES": ""})
    assert f"{S}HTTP_API_KEYS: " in _run_server({f"{S}HTTP_API_KEYS": " "})
