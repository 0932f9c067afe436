"""MCP as an agent host sees it, over both transports at once: `powercontext server run` (a real
process, streamable HTTP at /mcp) and `powercontext mcp` (a real stdio subprocess) on one
SQLite file, each driven by the official SDK client. The same listing, the same answers to
the same reads and bad arguments, schemas that agree with what the tools accept, and large
unicode results that arrive whole and paginate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.http.processes import free_port, wait_until_healthy

UNICODE = "Le héron 🐦 niche près du 池 — ça marche? Ünïcødé ✓ \u200d"
CODES = ("validation_error:", "not_found:", "invalid_cursor:", "forbidden:")


def pc_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    passed = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "HOME")}
    return passed | {
        "POWERCONTEXT_HOME": str(tmp_path / "home"),
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 'shared.db'}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
        **extra,
    }


@contextmanager
def server_process(env: dict[str, str], log: Path) -> Iterator[str]:
    """`powercontext server run` on a free loopback port; its stderr goes to a file (a pipe
    nobody reads fills up, and the server then blocks on its own access log)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "powercontext.cli", "server", "run", "--port", str(port)]
    with log.open("w") as stderr:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            wait_until_healthy(process, url, log=log)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=15)


@asynccontextmanager
async def http_client(url: str, key: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        yield client


@asynccontextmanager
async def stdio_client(env: dict[str, str]) -> AsyncIterator[Client]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "powercontext.cli", "mcp"], env=env
    )
    async with Client(server) as client:
        yield client


@asynccontextmanager
async def both(tmp_path: Path) -> AsyncIterator[tuple[Client, Client]]:
    env = pc_env(tmp_path)
    with server_process(env, tmp_path / "server.log") as url:
        async with http_client(url) as over_http, stdio_client(env) as over_stdio:
            yield over_http, over_stdio


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    text = result.content[0]
    assert text.type == "text" and json.loads(text.text) == result.structured_content
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    text = result.content[0]
    assert text.type == "text"
    assert "Traceback" not in text.text and 'File "' not in text.text
    return text.text


async def test_both_transports_list_the_same_tools_and_answer_alike(tmp_path: Path) -> None:
    async with both(tmp_path) as (over_http, over_stdio):
        listed_http = (await over_http.list_tools()).tools
        listed_stdio = (await over_stdio.list_tools()).tools
        assert [t.model_dump(mode="json") for t in listed_http] == [
            t.model_dump(mode="json") for t in listed_stdio
        ]
        for tool in listed_http:
            Draft202012Validator.check_schema(tool.input_schema)
            assert tool.output_schema is not None
            Draft202012Validator.check_schema(tool.output_schema)
            assert tool.description and tool.input_schema["type"] == "object"

        # Written over stdio, read over HTTP (and back): one store, unicode intact.
        metadata = {"lieu": "étang 🐸", "n": 3}
        wrote = ok(
            await over_stdio.call_tool(
                "remember", {"scope_id": "p-ü", "text": UNICODE, "metadata": metadata}
            )
        )
        ok(await over_http.call_tool("remember", {"scope_id": "p-ü", "text": "second 二"}))
        entry = wrote["entries"][0]
        reads: list[tuple[str, dict[str, Any]]] = [
            ("head", {"scope_id": "p-ü"}),
            ("search", {"scope_id": "p-ü", "query": "héron 🐦", "mode": "fts"}),
            ("search", {"scope_id": "p-ü", "query": "héron", "revision": 1}),
            ("search_batch", {"scope_id": "p-ü", "searches": [{"query": "池"}, {"query": "二"}]}),
            ("list_entries", {"scope_id": "p-ü"}),
            ("get_entry", {"scope_id": "p-ü", "citation": entry["citation"]}),
            ("get_entry_by_id", {"scope_id": "p-ü", "entry_id": entry["entry_id"]}),
            ("entry_history", {"scope_id": "p-ü", "entry_id": entry["entry_id"]}),
            ("list_changes", {"scope_id": "p-ü"}),
            ("list_scopes", {}),
            ("export_page", {"scope_id": "p-ü"}),
        ]
        for name, arguments in reads:
            from_http = ok(await over_http.call_tool(name, arguments))
            from_stdio = ok(await over_stdio.call_tool(name, arguments))
            for answer in (from_http, from_stdio):
                answer.get("header", {}).pop("exported_at", None)  # the one clock reading
            assert from_stdio == from_http, name
        found = ok(await over_http.call_tool("search", {"scope_id": "p-ü", "query": "héron"}))
        assert found["hits"][0]["text"] == UNICODE and found["hits"][0]["metadata"] == metadata

        bad: list[tuple[str, dict[str, Any], str]] = [
            ("remember", {}, "validation_error: text: Field required"),
            ("remember", {"scope_id": "p", "text": 7}, "validation_error: text: "),
            ("remember", {"scope_id": "p", "text": "x", "colour": "red"}, "colour: Extra"),
            ("remember", {"scope_id": "p", "text": "é" * 4097}, "validation_error: text: "),
            ("search", {"scope_id": "p", "query": "q", "limit": 0}, "validation_error: limit"),
            ("search", {"scope_id": "p", "query": "q", "limit": 101}, "validation_error: limit"),
            ("search", {"scope_id": "p", "query": "q", "limit": "5"}, "validation_error: limit"),
            ("search", {"scope_id": "p", "query": "q", "mode": "fuzzy"}, "validation_error: mode"),
            ("search", {"scope_id": "p-ü", "query": "q", "revision": 99}, "not_found: "),
            ("list_entries", {"scope_id": "p", "limit": 1001}, "validation_error: limit"),
            ("list_entries", {"scope_id": "p", "cursor": "nope"}, "invalid_cursor: "),
            ("list_changes", {"scope_id": "p", "since_revision": -1}, "validation_error: "),
            ("export_page", {"scope_id": "p", "limit": 1001}, "validation_error: limit"),
            ("head", {"scope_id": ""}, "validation_error: scope_id"),
            ("head", {"scope_id": "s" * 257}, "validation_error: scope_id"),
            ("get_entry", {"scope_id": "p", "citation": "c"}, "validation_error: citation"),
            ("entry_history", {"scope_id": "p", "entry_id": "none"}, "not_found: "),
            ("list_scopes", {"scope_id": "p"}, "validation_error: scope_id"),
        ]
        for name, arguments, says in bad:
            from_http = error_text(await over_http.call_tool(name, arguments))
            assert from_http == error_text(await over_stdio.call_tool(name, arguments)), name
            assert from_http.startswith(CODES) and says in from_http, (name, from_http)
            assert "é" * 50 not in from_http  # the text sent is never echoed


# Values an agent might put in any argument: each goes into every field of every tool.
PROBES: list[Any] = [None, 0, -1, 1, 2**63, 1.5, "", "x", "x" * 300, "\x00", [], ["a"], {}]
PROBES += [{"a": 1}, True, "auto", "redacted", "skip", "2024-01-01T00:00:00Z"]
# Times inside a filter and a batch entry: an ISO 8601 string, never a number (Unix seconds).
PROBES += [{"created_after": 0}, {"created_after": "2024-01-01T00:00:00Z"}]
PROBES += [[{"text": "t", "occurred_at": 0}], [{"text": "t", "occurred_at": "2024-01-01"}]]


async def test_every_schema_agrees_with_what_its_tool_accepts(tmp_path: Path) -> None:
    """A value the input schema allows is never refused as a validation error, and one it
    forbids always is, as a tool error, never a protocol error or a traceback."""
    async with stdio_client(pc_env(tmp_path)) as client:
        wrote = ok(await client.call_tool("remember", {"scope_id": "p", "text": "base"}))
        citation, entry_id = wrote["entries"][0]["citation"], wrote["entries"][0]["entry_id"]
        export = ok(await client.call_tool("export_page", {"scope_id": "p"}))
        valid: dict[str, dict[str, Any]] = {
            "remember": {"scope_id": "p", "text": "t"},
            "remember_batch": {"scope_id": "p", "entries": [{"text": "t"}]},
            "search": {"scope_id": "p", "query": "base"},
            "search_batch": {"scope_id": "p", "searches": [{"query": "base"}]},
            "list_entries": {"scope_id": "p"},
            "get_entry": {"scope_id": "p", "citation": citation},
            "revise_entry": {"scope_id": "p", "citation": citation, "text": "t2"},
            "retire_entry": {"scope_id": "p", "citation": citation},
            "reactivate_entry": {"scope_id": "p", "citation": citation},
            "list_changes": {"scope_id": "p"},
            "head": {"scope_id": "p"},
            "get_entry_by_id": {"scope_id": "p", "entry_id": entry_id},
            "entry_history": {"scope_id": "p", "entry_id": entry_id},
            "forget_entry": {"scope_id": "other", "entry_ids": ["none"]},
            "forget_scope": {"scope_id": "other"},
            "list_scopes": {},
            "export_page": {"scope_id": "p"},
            "import_entries": {"scope_id": "q", **export, "on_existing": "skip"},
        }
        valid["import_entries"].pop("next_offset", None)
        disagreements = []
        for tool in (await client.list_tools()).tools:
            schema = Draft202012Validator(tool.input_schema)
            base = valid[tool.name]
            assert schema.is_valid(base), tool.name
            answer = await client.call_tool(tool.name, base)  # writes may conflict: that's fine
            assert not answer.is_error or "validation_error" not in str(answer.content), tool.name
            for field in [*tool.input_schema.get("properties", {}), "not_a_field"]:
                formatted = "format" in json.dumps(tool.input_schema["properties"].get(field))
                for value in PROBES:
                    arguments = {**base, field: value}
                    allowed = schema.is_valid(arguments)
                    result = await client.call_tool(tool.name, arguments)
                    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                    refused = result.is_error and text.startswith("validation_error:")
                    assert not text.startswith("internal_error") and "Traceback" not in text
                    if allowed and refused and isinstance(value, str) and formatted:
                        continue  # jsonschema checks no `format` without extra packages
                    if allowed == refused:
                        disagreements.append((tool.name, field, value, text[:120]))
        assert not disagreements


async def test_large_unicode_results_arrive_whole_and_paginate(tmp_path: Path) -> None:
    texts = [f"n°{i} 🐦 héron {'ü' * 1900} 池{i}" for i in range(300)]  # ~4 KB of UTF-8 each
    async with both(tmp_path) as (over_http, over_stdio):
        entries = [{"text": text, "metadata": {"i": i}} for i, text in enumerate(texts)]
        ok(await over_stdio.call_tool("remember_batch", {"scope_id": "big", "entries": entries}))
        for client in (over_http, over_stdio):
            everything = ok(
                await client.call_tool("list_entries", {"scope_id": "big", "limit": 1000})
            )
            assert [e["text"] for e in everything["entries"]] == texts
            assert everything["next_cursor"] is None
            seen, cursor = [], None
            while True:
                arguments = {"scope_id": "big", **({"cursor": cursor} if cursor else {})}
                page = ok(await client.call_tool("list_entries", arguments))
                assert len(page["entries"]) <= 100  # the documented default page
                seen += [e["text"] for e in page["entries"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert seen == texts
            hits = ok(
                await client.call_tool(
                    "search", {"scope_id": "big", "query": "héron", "limit": 100}
                )
            )["hits"]
            assert len(hits) == 100 and all(
                hit["text"] == texts[hit["metadata"]["i"]] for hit in hits
            )
            exported = ok(await client.call_tool("export_page", {"scope_id": "big", "limit": 1000}))
            assert [e["text"] for e in exported["entries"]] == texts
            assert exported["next_offset"] is None
