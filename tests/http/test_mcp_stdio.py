"""`powercontext mcp`: the same tools over stdio, driven by the official SDK client, which
starts the command as a subprocess the way a desktop or IDE client does."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult

from powercontext.server.mcp import MEMORY_TOOLS

KEYS = json.dumps({"stdio-key-a": ["scope-a"], "stdio-key-all": ["*"]})


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    passed = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "HOME")}
    return passed | {
        "POWERCONTEXT_HOME": str(tmp_path / "home"),
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 'stdio.db'}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
        **extra,
    }


@asynccontextmanager
async def stdio_client(env: dict[str, str]) -> AsyncIterator[Client]:
    command = [sys.executable, "-m", "powercontext.cli", "mcp"]
    server = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with Client(server) as client:
        yield client


def _ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _error(result: CallToolResult) -> str:
    assert result.is_error
    text = result.content[0]
    assert text.type == "text"
    return text.text


async def test_tools_over_stdio_without_keys(tmp_path: Path) -> None:
    async with stdio_client(_env(tmp_path)) as client:
        listing = await client.list_tools()
        assert {tool.name for tool in listing.tools} == {tool.name for tool in MEMORY_TOOLS}
        written = _ok(
            await client.call_tool("remember", {"scope_id": "p", "text": "the heron nests"})
        )
        found = _ok(
            await client.call_tool("search", {"scope_id": "p", "query": "heron", "mode": "hybrid"})
        )
        assert [hit["text"] for hit in found["hits"]] == ["the heron nests"]
        entry_id = written["entries"][0]["entry_id"]
        history = _ok(
            await client.call_tool("entry_history", {"scope_id": "p", "entry_id": entry_id})
        )
        assert [c["op"] for c in history["changes"]] == ["add"]
    # What the stdio server wrote is in the same store the HTTP server and the CLI use.
    shown = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "powercontext.cli", "memory", "list", "-s", "p", "--local"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "the heron nests" in shown.stdout, shown.stderr


async def test_a_key_given_at_startup_holds_every_call_to_its_scopes(tmp_path: Path) -> None:
    keyed = _env(
        tmp_path, POWERCONTEXT_SERVER_HTTP_API_KEYS=KEYS, POWERCONTEXT_MCP_API_KEY="stdio-key-a"
    )
    async with stdio_client(keyed) as client:
        _ok(await client.call_tool("remember", {"scope_id": "scope-a", "text": "otter in a"}))
        for name, arguments in (
            ("remember", {"scope_id": "scope-b", "text": "otter sneaks into b"}),
            ("search", {"scope_id": "scope-b", "query": "otter"}),
            ("head", {"scope_id": "scope-b"}),
        ):
            assert _error(await client.call_tool(name, arguments)).startswith("forbidden:"), name
    with_all = keyed | {"POWERCONTEXT_MCP_API_KEY": "stdio-key-all"}
    async with stdio_client(with_all) as client:
        head = _ok(await client.call_tool("head", {"scope_id": "scope-b"}))
        assert head["memory_ref"] is None  # the refused write wrote nothing


def test_a_missing_or_unknown_key_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    env = _env(tmp_path, POWERCONTEXT_SERVER_HTTP_API_KEYS=KEYS)
    for extra in ({}, {"POWERCONTEXT_MCP_API_KEY": "not-a-key"}):
        done = subprocess.run(
            [sys.executable, "-m", "powercontext.cli", "mcp"],
            env=env | extra,
            input="",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "unauthorized" in lines[0], done.stderr
        assert "--api-key" in lines[0] and "POWERCONTEXT_MCP_API_KEY" in lines[0]
        assert "POWERCONTEXT_CLIENT_API_KEY" not in lines[0]  # does nothing for `mcp`
        assert done.stdout == ""
    assert not (tmp_path / "stdio.db").exists()  # refused before the store was opened
