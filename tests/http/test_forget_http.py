"""Erasure end to end: HTTP v1 (curl-shaped), the SDK (async and sync), and MCP tools.

After `forget`, the entry's citations answer 410 `erased` with its ids and no text, search at
every revision no longer finds it, and the change log names the erasing key by fingerprint.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from powercontext.cli import app
from powercontext.client import ApiErasedError, PowerContextClient, SyncPowerContextClient
from powercontext.memory.erasure import ForgetMemoryRequest, ForgetScopeRequest
from powercontext.memory.errors import ErasedError
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest
from powercontext.server.auth import key_fingerprint
from tests.http.conftest import KEY_A, KEY_ALL, Served
from tests.http.test_mcp import _error_text, _ok, mcp_client

SECRET = "the vault code is 4471 marmoset"
runner = CliRunner()


def test_forget_over_http(auth_server: Served, fresh_scope: str) -> None:
    scope = fresh_scope
    with auth_server.client(KEY_ALL) as http:
        written = http.post("/v1/memory/remember", json={"scope_id": scope, "text": SECRET})
        assert written.status_code == 200
        entry = written.json()["entries"][0]
        revision = entry["citation"]["memory_ref"]["revision"]
        forget = {"scope_id": scope, "entry_ids": [entry["entry_id"]], "reason": "user request"}

        stale = http.post("/v1/memory/forget", json=forget | {"expected_revision": revision - 1})
        assert stale.status_code == 409 and stale.json()["error"]["code"] == "revision_conflict"
        missing = http.post("/v1/memory/forget", json=forget | {"entry_ids": ["nope"]})
        assert missing.status_code == 404
        with auth_server.client(KEY_A) as other:
            assert other.post("/v1/memory/forget", json=forget).status_code == 403
            wipe = {"scope_id": scope}
            assert other.post("/v1/scopes/forget", json=wipe).status_code == 403

        done = http.post("/v1/memory/forget", json=forget)
        assert done.status_code == 200, done.text
        assert done.json() == {
            "memory_ref": {"scope_id": scope, "revision": revision + 1},
            "entry_ids": [entry["entry_id"]],
            "erased_versions": 1,
        }
        again = http.post("/v1/memory/forget", json=forget)
        assert again.status_code == 410 and again.json()["error"]["code"] == "erased"

        cited = http.post(
            "/v1/memory/entries/get", json={"scope_id": scope, "citation": entry["citation"]}
        )
        assert cited.status_code == 410
        error = cited.json()["error"]
        assert error["details"] == {
            "entry_id": entry["entry_id"],
            "entry_version_id": entry["entry_version_id"],
            "erased_revision": revision + 1,
        }
        assert "marmoset" not in cited.text
        by_id = http.post(
            "/v1/memory/entries/by-id", json={"scope_id": scope, "entry_id": entry["entry_id"]}
        )
        assert by_id.status_code == 410
        search = {"scope_id": scope, "query": "vault marmoset", "mode": "fts", "revision": revision}
        assert http.post("/v1/memory/search", json=search).json()["hits"] == []

        log = http.post(
            "/v1/memory/changes", json={"scope_id": scope, "since_revision": revision}
        ).json()
        (change,) = log["changes"]
        assert (change["op"], change["actor"], change["reason"]) == (
            "forget",
            key_fingerprint(KEY_ALL),
            "user request",
        )
        assert KEY_ALL not in str(log)

        scoped = http.post("/v1/scopes/forget", json={"scope_id": scope})
        assert scoped.status_code == 200
        stale_scope = http.post(
            "/v1/scopes/forget", json={"scope_id": scope, "expected_revision": 1}
        )
        assert stale_scope.status_code == 409


async def test_forget_with_the_async_sdk(open_server: Served, fresh_scope: str) -> None:
    async with PowerContextClient(open_server.url) as client:
        memory = client.memory.for_scope(fresh_scope)
        written = await memory.remember(RememberMemoryRequest(text=SECRET))
        entry = written.entries[0]
        result = await memory.forget(entry.entry_id)
        assert result.entry_ids == (entry.entry_id,)
        with pytest.raises(ApiErasedError) as raised:
            await memory.get(entry.citation)
        assert isinstance(raised.value, ErasedError)  # the runtime's class, over HTTP too
        assert raised.value.status_code == 410
        assert raised.value.erased_revision == 2
        assert raised.value.entry_version_id == entry.entry_version_id
        page = await memory.search(SearchMemoryRequest(query="vault", mode="fts", revision=1))
        assert page.hits == ()


def test_forget_scope_with_the_sync_sdk(open_server: Served, fresh_scope: str) -> None:
    with SyncPowerContextClient(open_server.url) as client:
        memory = client.memory.for_scope(fresh_scope)
        batch = memory.remember_many(
            [RememberMemoryRequest(text=f"{SECRET} {i}") for i in range(3)]
        )
        erased = memory.forget_scope(ForgetScopeRequest(reason="offboarding"))
        assert erased.erased_versions == 3
        assert memory.list(revision=1).entries == ()
        with pytest.raises(ApiErasedError):
            memory.get_entry(batch.entries[0].entry_id)
        one = memory.remember(RememberMemoryRequest(text="after"))
        with pytest.raises(ApiErasedError):
            memory.forget(ForgetMemoryRequest(entry_ids=(batch.entries[1].entry_id,)))
        assert memory.forget(one.entries[0].entry_id).erased_versions == 1


async def test_forget_tools_over_mcp(auth_server: Served, fresh_scope: str) -> None:
    scope = fresh_scope
    async with mcp_client(auth_server, KEY_ALL) as client:
        written = _ok(await client.call_tool("remember", {"scope_id": scope, "text": SECRET}))
        entry = written["entries"][0]
        done = _ok(
            await client.call_tool(
                "forget_entry", {"scope_id": scope, "entry_ids": [entry["entry_id"]]}
            )
        )
        assert done["entry_ids"] == [entry["entry_id"]]
        text = _error_text(
            await client.call_tool("get_entry", {"scope_id": scope, "citation": entry["citation"]})
        )
        assert text.startswith("erased: ") and "marmoset" not in text
        log = _ok(await client.call_tool("list_changes", {"scope_id": scope}))
        assert log["changes"][-1]["actor"] == key_fingerprint(KEY_ALL)
        wiped = _ok(await client.call_tool("forget_scope", {"scope_id": scope}))
        assert wiped["memory_ref"]["scope_id"] == scope
    async with mcp_client(auth_server, KEY_A) as other:
        refused = await other.call_tool("forget_scope", {"scope_id": scope})
        assert _error_text(refused).startswith("forbidden: ")


def test_forget_with_the_cli_against_a_server(auth_server: Served, fresh_scope: str) -> None:
    with SyncPowerContextClient(auth_server.url, api_key=KEY_ALL) as client:
        memory = client.memory.for_scope(fresh_scope)
        entry = memory.remember(RememberMemoryRequest(text=SECRET)).entries[0]
    remote = ["--server-url", auth_server.url, "--api-key", KEY_ALL]
    shown = runner.invoke(
        app,
        ["memory", "forget", entry.entry_id, "--scope", fresh_scope, "--yes", "--json", *remote],
    )
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["entry_ids"] == [entry.entry_id]
    log = runner.invoke(app, ["memory", "changes", "--scope", fresh_scope, "--json", *remote])
    assert json.loads(log.stdout)["changes"][-1]["actor"] == key_fingerprint(KEY_ALL)
    wiped = runner.invoke(
        app, ["memory", "forget-scope", "--scope", fresh_scope, "--yes", "--json", *remote]
    )
    assert wiped.exit_code == 0 and json.loads(wiped.stdout)["erased_versions"] == 0


def test_a_keyed_forget_retried_over_http_answers_its_result(
    open_server: Served, fresh_scope: str
) -> None:
    with open_server.client() as http:
        written = http.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": SECRET})
        entry_id = written.json()["entries"][0]["entry_id"]
        body = {"scope_id": fresh_scope, "entry_ids": [entry_id], "idempotency_key": "gdpr-118"}
        first = http.post("/v1/memory/forget", json=body)
        again = http.post("/v1/memory/forget", json=body)
        unkeyed = http.post("/v1/memory/forget", json=body | {"idempotency_key": None})
        other = http.post("/v1/memory/forget", json=body | {"reason": "another body"})
    assert first.status_code == 200, first.text
    assert again.status_code == 200 and again.json() == first.json()
    assert unkeyed.status_code == 410  # without its key, a repeat is an erased entry
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_conflict"


def test_a_scope_forget_reusing_an_erased_writes_key_is_a_documented_410(
    auth_server: Served, fresh_scope: str
) -> None:
    """The erasure blanks the body hash of the keyed write it undid; any later use of that key,
    a scope forget included, answers 410 `erased`, which the route documents."""
    scope = fresh_scope
    with auth_server.client(KEY_ALL) as http:
        keyed = {"scope_id": scope, "text": SECRET, "idempotency_key": "k-1"}
        entry = http.post("/v1/memory/remember", json=keyed).json()["entries"][0]
        forget = {"scope_id": scope, "entry_ids": [entry["entry_id"]]}
        assert http.post("/v1/memory/forget", json=forget).status_code == 200
        wipe = http.post("/v1/scopes/forget", json={"scope_id": scope, "idempotency_key": "k-1"})
        assert wipe.status_code == 410 and wipe.json()["error"]["code"] == "erased"
        spec = http.get("/openapi.json").json()
        assert "410" in spec["paths"]["/v1/scopes/forget"]["post"]["responses"]
