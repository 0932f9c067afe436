"""The environment variables the issues and the RFC pin, by their exact spelling.

Deployments set these names; a rename of a settings field (or of its group) changes the variable
silently unless something spells the variable out. Each row is the variable as an issue writes
it, the field it must reach, the default the issue states, and a value it must refuse with a
message that names the variable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from powercontext import ServerSettings
from powercontext.client import ClientSettings
from powercontext.memory.errors import ConfigurationError

UNSET = object()

# (issue, variable, attribute path in ServerSettings, the issue's default, a value and what it
# reads as, a refused value)
SERVER: list[tuple[str, str, str, Any, str, Any, str | None]] = [
    ("#2", "POWERCONTEXT_SERVER_DATABASE_URL", "database.url", UNSET,
     "sqlite:///pinned.db", "sqlite:///pinned.db", "mysql://x"),
    ("#2", "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL", "inference.embedding_model", UNSET,
     "local:all-minilm-l6-v2", "local:all-minilm-l6-v2", None),
    ("#2", "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL", "inference.generation_model", None,
     "openai:pinned-model", "openai:pinned-model", None),
    ("#2", "POWERCONTEXT_SERVER_INFERENCE_GENERATION_TIMEOUT_SECONDS",
     "inference.generation_timeout_seconds", 30, "7.5", 7.5, "abc"),
    ("#2", "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MAX_REQUESTS",
     "inference.generation_max_requests", 2, "3", 3, "many"),
    ("#3", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENABLED",
     "runtime.memory_rerank_enabled", False, "true", True, "perhaps"),
    ("#3", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMIT",
     "runtime.memory_rerank_candidate_limit", 30, "100", 100, "101"),
    ("#3", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMIT",
     "runtime.memory_rerank_candidate_limit", 30, "1", 1, "0"),
    ("#9", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_PROVIDER",
     "runtime.memory_rerank_provider", "llm", "endpoint", "endpoint", "cohere"),
    ("#9", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_FAILURE_POLICY",
     "runtime.memory_rerank_failure_policy", "fail_closed", "fail_open", "fail_open",
     "fail_sideways"),
    ("#10", "POWERCONTEXT_SERVER_UI_ENABLED", "ui.enabled", False, "true", True, "perhaps"),
    ("#25", "POWERCONTEXT_SERVER_RUNTIME_SEARCH_TIMEOUT_SECONDS",
     "runtime.search_timeout_seconds", None, "2.5", 2.5, "soon"),
    ("#25", "POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_QUERIES", "runtime.max_batch_queries", 64,
     "8", 8, "0"),
]  # fmt: skip


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("POWERCONTEXT_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no stray .env file


def _field(settings: object, path: str) -> Any:
    value = settings
    for part in path.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(
    ("issue", "variable", "path", "default", "value", "expected"),
    [row[:6] for row in SERVER],
)
def test_a_pinned_variable_reaches_its_setting(
    monkeypatch: pytest.MonkeyPatch,
    issue: str,
    variable: str,
    path: str,
    default: Any,
    value: str,
    expected: Any,
) -> None:
    if default is not UNSET:
        assert _field(ServerSettings(), path) == default, f"{issue}: default of {variable}"
    monkeypatch.setenv(variable, value)
    assert _field(ServerSettings(), path) == expected, (issue, variable)


@pytest.mark.parametrize(
    ("issue", "variable", "refused"), [(row[0], row[1], row[6]) for row in SERVER if row[6]]
)
def test_a_refused_value_names_the_pinned_variable(
    monkeypatch: pytest.MonkeyPatch, issue: str, variable: str, refused: str
) -> None:
    monkeypatch.setenv(variable, refused)
    with pytest.raises(ConfigurationError) as caught:
        ServerSettings()
    assert variable in str(caught.value), (issue, str(caught.value))


def test_a_local_gguf_generation_model_is_accepted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # #22: `llamacpp:/path/model.gguf` is the generation model string of a local file.
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(64))
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL", f"llamacpp:{model}")
    assert ServerSettings().inference.generation_model == f"llamacpp:{model}"


def test_the_data_directory_variable_is_powercontext_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    url = ServerSettings().database.resolved_url()
    assert url == f"sqlite:///{tmp_path / 'home' / 'powercontext.db'}"


@pytest.mark.parametrize(
    ("variable", "field", "value", "expected"),
    [
        ("POWERCONTEXT_CLIENT_SERVER_URL", "server_url", "http://127.0.0.1:9", None),
        ("POWERCONTEXT_CLIENT_API_KEY", "api_key", "pc-key", None),
        ("POWERCONTEXT_CLIENT_TIMEOUT", "timeout", "12.5", 12.5),
    ],
)
def test_the_pinned_client_variables_reach_the_sdk_settings(
    monkeypatch: pytest.MonkeyPatch, variable: str, field: str, value: str, expected: Any
) -> None:
    monkeypatch.setenv(variable, value)
    got = getattr(ClientSettings(), field)
    got = got.get_secret_value() if hasattr(got, "get_secret_value") else got
    assert got == (value if expected is None else expected)
