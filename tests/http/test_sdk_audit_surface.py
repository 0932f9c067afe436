"""The SDK's surface as documented: the sync and async clients are twins of the runtime's
ScopedMemory, the docs' examples run as written, and the server URL may carry a path."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from powercontext.client import (
    AsyncMemoryClient,
    AsyncScopedMemoryClient,
    PowerContextClient,
    SyncMemoryClient,
    SyncPowerContextClient,
    SyncScopedMemoryClient,
)
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.scoped import ScopedMemory
from powercontext.server import create_app
from tests.http.conftest import Served, _settings
from tests.http.live import live_server

ROOT = Path(__file__).resolve().parents[2]
DOC_URL = "http://127.0.0.1:8000"
PREFIX = "/memory-api"
# The runtime's extras that have no HTTP route (`actor` comes from the API key over HTTP).
RUNTIME_ONLY = {"add_entries", "export", "pending_vectors", "reindex"}
HTTP_ONLY_PARAMS = frozenset({"include_rerank", "actor"})


def _public(cls: type) -> dict[str, Any]:
    return {n: getattr(cls, n) for n in dir(cls) if not n.startswith("_")}


def _shape(method: Any, skip: frozenset[str] = frozenset()) -> list[tuple[str, Any, Any]]:
    """Names, kinds and defaults of the parameters; types differ only sync vs async."""
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(method).parameters.values()
        if p.name not in skip
    ]


@pytest.mark.parametrize(
    ("async_cls", "sync_cls"),
    [
        (AsyncScopedMemoryClient, SyncScopedMemoryClient),
        (AsyncMemoryClient, SyncMemoryClient),
        (PowerContextClient, SyncPowerContextClient),
    ],
)
def test_the_sync_client_is_the_async_clients_twin(async_cls: type, sync_cls: type) -> None:
    async_methods, sync_methods = _public(async_cls), _public(sync_cls)
    assert set(async_methods) - {"aclose"} == set(sync_methods) - {"close"}
    for name, method in async_methods.items():
        if name == "aclose" or not callable(method):
            continue
        twin = sync_methods[name]
        assert _shape(method) == _shape(twin), name
        assert not inspect.iscoroutinefunction(twin), name
        assert inspect.iscoroutinefunction(method) == (name not in ("export_lines", "for_scope"))
        returns = inspect.signature(method).return_annotation
        sync_returns = inspect.signature(twin).return_annotation
        if name in ("export_lines", "for_scope"):
            continue  # an async iterator vs an iterator, a scope client of its own kind
        assert str(returns).replace("Async", "") == str(sync_returns).replace("Async", ""), name


def test_the_scoped_clients_mirror_the_runtime() -> None:
    runtime, sdk = _public(ScopedMemory), _public(AsyncScopedMemoryClient)
    assert set(runtime) - RUNTIME_ONLY == set(sdk) - {"scope_id"} - RUNTIME_ONLY
    for name in set(sdk) & set(runtime):
        if callable(sdk[name]):
            assert _shape(sdk[name], HTTP_ONLY_PARAMS) == _shape(runtime[name], HTTP_ONLY_PARAMS)


def _python_blocks(path: Path, start: str | None = None, end: str | None = None) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if start is not None and end is not None:
        text = text[text.index(start) : text.index(end)]
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _mounted(app: Any) -> Any:
    """`app` behind a proxy that serves it under PREFIX and answers 404 pages elsewhere."""

    async def proxy(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await app(scope, receive, send)
            return
        if not scope["path"].startswith(PREFIX + "/"):
            headers = [(b"content-type", b"text/html")]
            await send({"type": "http.response.start", "status": 404, "headers": headers})
            await send({"type": "http.response.body", "body": b"<h1>Not Found</h1>"})
            return
        path = scope["path"][len(PREFIX) :]
        await app({**scope, "path": path, "raw_path": path.encode()}, receive, send)

    return proxy


@pytest.fixture(scope="module")
def prefixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("prefixed") / "prefixed.db"
    app = _mounted(create_app(_settings(db, "hash")))
    with live_server(app) as server:
        yield server.url + PREFIX


def test_the_docs_sdk_examples_run_as_written(
    prefixed: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/http.md section 3 and the README, against a server behind a path prefix; only the
    URL and the revisions the fragments name (they assume an older scope) are swapped."""
    monkeypatch.chdir(tmp_path)  # the export example writes project.jsonl
    readme = [b for b in _python_blocks(ROOT / "README.md") if "powercontext.client" in b]
    first, fragments, transfer = _python_blocks(
        ROOT / "docs/http.md", "## 3. Python SDK", "## 4. The command line"
    )
    for block in (*readme, first):
        assert DOC_URL in block
        exec(block.replace(DOC_URL, prefixed), {})

    with SyncPowerContextClient(prefixed) as client:
        memory = client.memory.for_scope("project")
        entries = memory.remember_many(
            [
                RememberMemoryRequest(kind="decision", text=t, metadata={"priority": 3})
                for t in ("deploy one", "deploy two", "deploy three")
            ]
        ).entries
        head = memory.head()
        assert head is not None
        names: dict[str, Any] = {
            "client": client,
            "memory": memory,
            "SearchMemoryRequest": SearchMemoryRequest,
            "entry_id": entries[0].entry_id,
            "a": entries[1].entry_id,
            "b": entries[2].entry_id,
            "old_citation": entries[0].citation,
            "batch": [RememberMemoryRequest(text="one more")],
            "page": memory.search(SearchMemoryRequest(query="deploy")),
        }
        # The forget_scope line runs after the batch and two forgets: three revisions on.
        swaps = {
            "revision=3)": f"revision={head.revision})",
            "revision=12)": f"revision={head.revision})",
            "expected_revision=42": f"expected_revision={head.revision + 3}",
        }
        for old, new in swaps.items():
            assert old in fragments, old
            fragments = fragments.replace(old, new)
        # Before the fragments' forget_scope, so there is something to copy.
        exec(transfer, {"client": client})
        copied = client.memory.for_scope("project-copy").list().entries
        assert sorted(e.text for e in copied) == sorted(e.text for e in memory.list().entries)
        assert len(copied) == 4  # the first example's entry and the three above
        exec(fragments, names)
        assert memory.list().entries == ()  # the last forget_scope ran


@pytest.mark.parametrize("suffix", ["", "/"])
async def test_a_prefixed_server_url_reaches_every_route(
    prefixed: str, suffix: str, fresh_scope: str
) -> None:
    async with PowerContextClient(prefixed + suffix) as client:
        assert client.server_url == prefixed
        memory = client.memory.for_scope(fresh_scope)
        written = await memory.remember(RememberMemoryRequest(text="behind a proxy"))
        assert await memory.get(written.entries[0].citation) == written.entries[0]
        lines = [line async for line in memory.export_lines()]
        copy = client.memory.for_scope(fresh_scope + "-copy")
        assert (await copy.import_lines(lines)).added == 1
        assert (await client.health()).status == "ok"


def test_a_trailing_slash_is_the_same_server(open_server: Served, fresh_scope: str) -> None:
    with SyncPowerContextClient(open_server.url + "/") as client:
        assert client.server_url == open_server.url
        memory = client.memory.for_scope(fresh_scope)
        memory.remember(RememberMemoryRequest(text="slash"))
        assert [e.text for e in memory.list().entries] == ["slash"]


async def test_leaving_the_context_closes_the_connections(open_server: Served) -> None:
    with SyncPowerContextClient(open_server.url) as sync_client:
        sync_client.health()
    async with PowerContextClient(open_server.url) as async_client:
        await async_client.health()
    for client in (sync_client, async_client):
        assert client._http.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        sync_client.health()
