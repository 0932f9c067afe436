"""The CLI commands and options the issues pin, by their exact spelling.

Scripts and docs call these; a renamed command or option breaks them without any other test
noticing, because most CLI tests call one command each. `bench locomo` is mounted lazily, so
its options are read from the harness's own app.
"""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from powercontext.bench.locomo.cli import app as locomo_app
from powercontext.cli import app

ROOT = typer.main.get_command(app)

# (issue, command path) for every command an issue names.
COMMANDS = [
    ("#4", "server run"),
    ("#4", "memory remember"),
    ("#4", "memory search"),
    ("#4", "memory list"),
    ("#4", "memory get"),
    ("#4", "memory retire"),
    ("#4", "reindex"),
    ("#4", "config show"),
    ("#5", "db upgrade"),
    ("#6", "bench locomo"),
    ("#18", "memory forget"),
    ("#18", "memory scopes"),
    ("#18", "memory export"),
    ("#18", "memory import"),
    ("#21", "mcp"),
    ("#21", "memory revise"),
    ("#21", "memory reactivate"),
    ("#21", "memory changes"),
    ("#21", "memory head"),
    ("#21", "memory history"),
]
MEMORY_CLIENT_OPTIONS = ("--scope", "--local", "--json")  # #4, on every memory command


def _command(path: str) -> Any:
    command: Any = ROOT
    for word in path.split():
        command = command.commands[word]
    return command


def _options(command: Any) -> dict[str, Any]:
    return {opt: param for param in command.params for opt in (*param.opts, *param.secondary_opts)}


def _choices(param: Any) -> tuple[str, ...]:
    # Typer builds a choice option from the Literal annotation it keeps on the parameter.
    return typing.get_args(param.type_descriptor.annotation)


@pytest.mark.parametrize(("issue", "path"), COMMANDS)
def test_a_pinned_command_exists(issue: str, path: str) -> None:
    words = path.split()
    parent = _command(" ".join(words[:-1])) if len(words) > 1 else ROOT
    assert words[-1] in parent.commands, f"{issue}: powercontext {path}"


@pytest.mark.parametrize("name", ["remember", "search", "list", "get", "retire"])
def test_the_memory_commands_take_the_pinned_options(name: str) -> None:
    options = _options(_command(f"memory {name}"))
    missing = [opt for opt in MEMORY_CLIENT_OPTIONS if opt not in options]
    assert not missing, f"#4: powercontext memory {name} lacks {missing}"


def test_server_run_takes_host_and_port_with_the_pinned_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert {"--host", "--port"} <= set(_options(_command("server run")))
    # #4: 127.0.0.1:8000 when neither is given; they default to the HTTP settings.
    monkeypatch.delenv("POWERCONTEXT_SERVER_HTTP_HOST", raising=False)
    monkeypatch.delenv("POWERCONTEXT_SERVER_HTTP_PORT", raising=False)
    result = CliRunner().invoke(app, ["config", "show", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["POWERCONTEXT_SERVER_HTTP_HOST"] == "127.0.0.1"
    assert shown["POWERCONTEXT_SERVER_HTTP_PORT"] == 8000


# (option, choices or None, default or None) as #6 writes `powercontext bench locomo`.
LOCOMO: list[tuple[str, tuple[str, ...] | None, Any]] = [
    ("--data", None, None),
    ("--rerank", ("none", "llm"), "none"),
    ("--mode", ("auto", "fts", "vector", "hybrid"), None),
    ("--top-k", None, 30),
    ("--answer-k", None, 10),
    ("--granularity", ("turn", "session"), None),
    ("--answer", None, None),
    ("--judge", ("strict", "topical", "none"), None),
    ("--server", None, None),
    ("--out", None, None),
]


@pytest.mark.parametrize(("option", "choices", "default"), LOCOMO)
def test_bench_locomo_takes_the_pinned_options(
    option: str, choices: tuple[str, ...] | None, default: Any
) -> None:
    command: Any = typer.main.get_command(locomo_app)
    if hasattr(command, "commands"):
        command = command.commands["locomo"]
    options = _options(command)
    assert option in options, f"#6: powercontext bench locomo {option}"
    param = options[option]
    if choices is not None:
        assert _choices(param) == choices
    if default is not None:
        assert param.default == default
