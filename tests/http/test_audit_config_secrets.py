"""Secrets set in the configuration never show: not in a real server's log (text and JSON),
`/v1/ready`, `/metrics`, the inspector, a rerank that fails on its provider, an auth error,
`config show`, a configuration error, or any command's `--help`.

Every secret the settings take is set to a marked value: API keys, the generation and rerank
endpoint keys, the passwords in the provider URLs and, on PostgreSQL, in the database URL
(the test server trusts local connections, so the password is carried but not needed).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests import pg_server
from tests.http.processes import free_port, start_server, wait_until_healthy

MARK = "S3CRET"
ADMIN_KEY = f"admin-{MARK}-key-1"
TEAM_KEY = f"team-{MARK}-key-2"
S = "POWERCONTEXT_SERVER_"


def _env(tmp_path: Path, log_format: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("POWERCONTEXT_")}
    env.update(
        {
            "POWERCONTEXT_HOME": str(tmp_path / "home"),
            f"{S}DATABASE_URL": f"sqlite:///{tmp_path / 'memory.db'}",
            f"{S}INFERENCE_EMBEDDING_MODEL": "none",
            f"{S}HTTP_API_KEYS": json.dumps({ADMIN_KEY: ["*"], TEAM_KEY: ["team"]}),
            f"{S}INFERENCE_GENERATION_MODEL": "openai-compatible:m",
            f"{S}INFERENCE_GENERATION_BASE_URL": f"http://u:base-{MARK}@127.0.0.1:9/v1",
            f"{S}INFERENCE_GENERATION_API_KEY": f"gen-{MARK}",
            f"{S}RUNTIME_MEMORY_RERANK_ENABLED": "true",
            f"{S}RUNTIME_MEMORY_RERANK_PROVIDER": "endpoint",
            f"{S}RUNTIME_MEMORY_RERANK_FAILURE_POLICY": "fail_open",
            f"{S}RUNTIME_MEMORY_RERANK_ENDPOINT_URL": f"http://u:end-{MARK}@127.0.0.1:9/rerank",
            f"{S}RUNTIME_MEMORY_RERANK_ENDPOINT_API_KEY": f"endkey-{MARK}",
            f"{S}UI_ENABLED": "true",
            f"{S}LOG_FORMAT": log_format,
        }
    )
    return env


def _serve_and_collect(env: dict[str, str]) -> str:
    """Everything a running server shows to callers and in its log, as one text."""
    process, url = start_server(env)
    shown = []
    try:
        wait_until_healthy(process, url)
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        with httpx.Client(base_url=url, timeout=10) as client:
            for path in ("/v1/ready", "/v1/health", "/metrics", "/ui", "/ui/api/scopes"):
                shown.append(client.get(path, headers=admin).text)
            write = {"scope_id": "team", "entries": [{"text": "We deploy on Fridays."}]}
            shown.append(client.post("/v1/memory/remember", headers=admin, json=write).text)
            search = {"scope_id": "team", "query": "deploy", "include_rerank": "redacted"}
            for key in (ADMIN_KEY, TEAM_KEY, "not-a-key-at-all"):
                headers = {"Authorization": f"Bearer {key}"}
                shown.append(client.post("/v1/memory/search", headers=headers, json=search).text)
            other = {**search, "scope_id": "other"}
            team = {"Authorization": f"Bearer {TEAM_KEY}"}
            shown.append(client.post("/v1/memory/search", headers=team, json=other).text)
            shown.append(client.post("/ui/api/search", headers=admin, json=search).text)
        # the rerank failed on its provider and was served fail-open: the path that logs it
        assert "degraded_provider_error" in shown[-5], shown[-5]
    finally:
        process.send_signal(signal.SIGTERM)
        _, log = process.communicate(timeout=30)
    return "\n".join([*shown, log])


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "powercontext.cli", *args],
        env={**env, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_no_secret_shows_while_serving(tmp_path: Path, log_format: str) -> None:
    text = _serve_and_collect(_env(tmp_path, log_format))
    assert "runtime open" in text  # the log was collected
    assert MARK not in text, [line for line in text.splitlines() if MARK in line]


def test_no_secret_shows_in_config_show_errors_or_help(tmp_path: Path) -> None:
    env = {**_env(tmp_path, "text"), "POWERCONTEXT_CLIENT_API_KEY": f"client-{MARK}"}
    env["POWERCONTEXT_MCP_API_KEY"] = f"mcp-{MARK}"
    outputs = [
        _cli(env, "config", "show"),
        _cli(env, "config", "show", "--json"),
        _cli({**env, f"{S}HTTP_PORT": "x"}, "server", "run"),
        _cli({**env, f"{S}HTTP_PORT": "x", f"{S}HTTP_APIKEYS": "x"}, "server", "run"),
    ]
    for command in ([], ["server", "run"], ["memory", "search"], ["mcp"], ["config", "show"]):
        outputs.append(_cli(env, *command, "--help"))
    assert "POWERCONTEXT_SERVER_HTTP_PORT" in outputs[2]  # the error was produced
    for output in outputs:
        assert MARK not in output, output


def test_no_database_password_shows_on_postgresql(tmp_path: Path) -> None:
    base = asyncio.run(pg_server.database_url(tmp_path))
    assert base.startswith("postgresql://postgres:@"), base
    password = f"db-{MARK}-p@ss"  # `@` inside: the user part ends at the last one
    url = base.replace("postgres:@", f"postgres:{password.replace('@', '%40')}@", 1)
    env = {**_env(tmp_path, "json"), f"{S}DATABASE_URL": url + f"&password=q-{MARK}"}
    text = _serve_and_collect(env)
    text += _cli(env, "config", "show") + _cli(env, "db", "upgrade")
    # a database that cannot be reached: the error names the URL, masked
    unreachable = url.replace("?host=", "?port=1&host=/nonexistent-dir-") + f"&password=q-{MARK}"
    # A free port: the address is checked before the database, and 8000 may be taken here.
    port = str(free_port())
    failed = _cli({**env, f"{S}DATABASE_URL": unreachable, f"{S}HTTP_PORT": port}, "server", "run")
    assert "storage_unavailable" in failed, failed
    assert MARK not in text + failed, [
        line for line in (text + failed).splitlines() if MARK in line
    ]
