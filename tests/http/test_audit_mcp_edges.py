"""MCP at its edges, as a host meets them: keys over HTTP, the loopback Host/Origin rule, a
string cut inside an emoji, what `powercontext mcp` writes to stdout and stderr, how it ends,
and the docs/mcp.md examples run as written against real processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import MCPError

from tests.http.test_audit_mcp_parity import (
    error_text,
    http_client,
    ok,
    pc_env,
    server_process,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
KEYS = json.dumps({"audit-key-a-0001": ["scope-a"], "audit-key-all-02": ["*"]})
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "audit", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(id_: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


def _mcp(
    cli_args: list[str], lines: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`powercontext mcp` fed these lines, then EOF, as `printf ... | powercontext mcp`."""
    return subprocess.run(
        [sys.executable, "-m", "powercontext.cli", "mcp", *cli_args],
        input="".join(line + "\n" for line in lines),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_keys_over_http_refuse_missing_and_wrong_ones(tmp_path: Path) -> None:
    env = pc_env(tmp_path, POWERCONTEXT_SERVER_HTTP_API_KEYS=KEYS)
    with server_process(env, tmp_path / "server.log") as url:
        async with httpx.AsyncClient(base_url=url, headers=ACCEPT) as raw:
            for auth in ({}, {"Authorization": "Bearer not-a-key-000"}, {"Authorization": "B x"}):
                answer = await raw.post("/mcp", json=INIT, headers=auth)
                assert answer.status_code == 401, auth
                assert answer.headers["www-authenticate"] == "Bearer"
                assert answer.json()["error"]["code"] == "unauthorized"
            right = {"Authorization": "bearer audit-key-a-0001"}  # the scheme is case-blind
            answer = await raw.post("/mcp", json=INIT, headers=right)
            assert answer.status_code == 200 and answer.json()["result"]["serverInfo"]
        with pytest.raises(ExceptionGroup) as refused:  # the SDK gives up, it does not hang
            async with http_client(url, "not-a-key-000") as client:
                await client.list_tools()
        assert refused.group_contains(MCPError)
        async with http_client(url, "audit-key-a-0001") as client:
            ok(await client.call_tool("remember", {"scope_id": "scope-a", "text": "in a"}))
            forbidden = error_text(await client.call_tool("head", {"scope_id": "scope-b"}))
            assert forbidden.startswith("forbidden:") and "scope-b" in forbidden
            scopes = ok(await client.call_tool("list_scopes", {}))["scopes"]
            assert [scope["scope_id"] for scope in scopes] == ["scope-a"]


def test_loopback_names_reach_mcp_as_they_reach_every_route(tmp_path: Path) -> None:
    """docs/http.md: a loopback server answers Host 127.0.0.1, localhost or [::1] (any port)
    and a loopback Origin. /mcp used to add the SDK's own check, which wanted a port in both
    and `http` only, and refused the rest in plain text (421 / 403) where /v1 answered 200."""
    with server_process(pc_env(tmp_path), tmp_path / "server.log") as url:
        loopback = [
            {"Host": "localhost"},
            {"Host": "127.0.0.1"},
            {"Host": "[::1]"},
            {"Host": "LocalHost:8000"},
            {"Origin": "http://localhost"},
            {"Origin": "https://127.0.0.1:8443"},
            {"Origin": "http://[::1]"},
        ]
        for headers in loopback:
            v1 = httpx.post(f"{url}/v1/memory/head", json={"scope_id": "p"}, headers=headers)
            answer = httpx.post(f"{url}/mcp", json=INIT, headers=ACCEPT | headers)
            assert v1.status_code == 200, headers
            assert answer.status_code == 200, (headers, answer.text)
            assert answer.json()["result"]["serverInfo"]["name"] == "powercontext"
        foreign = [
            {"Host": "evil.example"},
            {"Host": "127.0.0.1.nip.io:8000"},
            {"Origin": "http://evil.example"},
            {"Origin": "null"},
            {"Origin": "file://"},
        ]
        for headers in foreign:
            answer = httpx.post(f"{url}/mcp", json=INIT, headers=ACCEPT | headers)
            assert answer.status_code == 403, headers
            assert answer.json()["error"]["code"] == "forbidden"
            assert "DNS rebinding" in answer.json()["error"]["message"]


CUT_EMOJI = '"\\ud83d"'  # JSON.stringify of a JavaScript string cut inside an emoji


def _cut(message: dict[str, Any], value: str) -> str:
    return json.dumps(message).replace('"@CUT@"', value)


def test_a_lone_surrogate_is_answered_with_the_request_id(tmp_path: Path) -> None:
    """Python's SDK parser refuses a lone surrogate escape and answered -32700 with id null:
    over stdio the client then waited for its answer forever. It gets one, by its id."""
    in_text = _cut(_call(1, "remember", {"scope_id": "p", "text": "@CUT@"}), CUT_EMOJI)
    in_id = _cut({**_call(0, "head", {"scope_id": "p"}), "id": "@CUT@"}, '"\\udc00"')
    after = json.dumps(_call(2, "head", {"scope_id": "p"}))
    lines = [json.dumps(INIT), json.dumps(INITIALIZED), in_text, in_id, after]
    done = _mcp([], lines, pc_env(tmp_path))
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    errors = {a["id"]: a["error"] for a in answers if "error" in a}
    assert set(errors) == {1, None}  # an id that is itself cut cannot be echoed
    for error in errors.values():
        assert error["code"] == -32700 and "lone UTF-16 surrogate" in error["message"]
    assert any(a["id"] == 2 and not a["result"]["isError"] for a in answers)

    with server_process(pc_env(tmp_path), tmp_path / "server.log") as url:
        answer = httpx.post(f"{url}/mcp", content=in_text, headers=ACCEPT)
        assert answer.status_code == 400
        assert answer.json()["id"] == 1
        assert "lone UTF-16 surrogate" in answer.json()["error"]["message"]
        for other in (b"\xef\xbb\xbf" + after.encode(), after.encode("utf-16")):
            answer = httpx.post(f"{url}/mcp", content=other, headers=ACCEPT)  # not surrogates
            assert answer.status_code == 400 and answer.json()["id"] is None
            assert "surrogate" not in answer.json()["error"]["message"]
        still = httpx.post(f"{url}/mcp", content=after, headers=ACCEPT)
        assert still.status_code == 200 and still.json()["id"] == 2


def test_stdio_writes_only_protocol_to_stdout_and_ends_on_eof(tmp_path: Path) -> None:
    calls = [
        _call(1, "remember", {"scope_id": "p", "text": "héron 🐦 池"}),
        _call(2, "search", {"scope_id": "p", "query": "héron", "limit": 500}),
        _call(3, "nope", {}),
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
    ]
    lines = [json.dumps(INIT), json.dumps(INITIALIZED), *(json.dumps(c) for c in calls)]
    done = _mcp([], lines, pc_env(tmp_path))
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON
    assert all(a["jsonrpc"] == "2.0" for a in answers)
    assert sorted(a["id"] for a in answers) == [0, 1, 2, 3, 4]
    by_id = {a["id"]: a for a in answers}
    written = by_id[1]["result"]["structuredContent"]["entries"][0]
    assert by_id[1]["result"]["isError"] is False and written["text"] == "héron 🐦 池"
    assert by_id[2]["result"]["isError"] is True
    assert by_id[2]["result"]["content"][0]["text"].startswith("validation_error: limit")
    assert by_id[3]["error"]["code"] == -32602
    assert "runtime open" in done.stderr  # the logs are on stderr, not stdout


@pytest.mark.parametrize(
    "url",
    [
        "bogus://nowhere",
        "sqlite:///{tmp}/a-file/memory.db",
        "sqlite:///{tmp}/not-a-database.db",
        "postgresql://user:secret-pw@127.0.0.1:1/db",
    ],
)
def test_a_bad_database_url_is_one_line_on_stderr(tmp_path: Path, url: str) -> None:
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "not-a-database.db").write_text("not sqlite at all, just text" * 10)
    env = pc_env(tmp_path, POWERCONTEXT_SERVER_DATABASE_URL=url.format(tmp=tmp_path))
    done = _mcp([], [json.dumps(INIT)], env)
    assert done.returncode != 0
    assert done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error "), done.stderr
    assert "POWERCONTEXT_SERVER_DATABASE_URL" in lines[0] and "secret-pw" not in lines[0]


def _block(after: str, fence: str) -> str:
    """The first fenced block of kind `fence` after the heading or text `after`."""
    text = DOCS.read_text()
    start = text.index(after)
    match = re.search(rf"```{fence}\n(.*?)```", text[start:], re.S)
    assert match is not None, (after, fence)
    return match.group(1)


def test_the_docs_examples_work_as_written(tmp_path: Path) -> None:
    console = _block("## Protocol errors and tool errors", "console")
    command, _, printed = console.partition("\n{")
    with server_process(pc_env(tmp_path / "open"), tmp_path / "open.log") as url:
        port = url.rsplit(":", 1)[1]
        shell = command.removeprefix("$ ").replace("localhost:8000", f"localhost:{port}")
        done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=30)
    assert json.loads(done.stdout) == json.loads("{" + printed)

    exported = _block("## Add it to an MCP client", "bash").splitlines()[0]
    keys = exported.split("=", 1)[1].strip("'")
    code = _block("## From Python, with the MCP SDK", "python")
    env = pc_env(tmp_path / "keyed", POWERCONTEXT_SERVER_HTTP_API_KEYS=keys)
    with server_process(env, tmp_path / "keyed.log") as url:
        script = code.replace("http://127.0.0.1:8000", url) + "\n"  # the REPL runs a block on \n
        done = subprocess.run(
            [sys.executable, "-m", "asyncio"],
            input=script,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert "Traceback" not in done.stderr, done.stderr
    assert "'text': 'Deploys go out on Tuesdays'" in done.stdout, done.stdout
