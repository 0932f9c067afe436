"""Session-scoped live servers (real uvicorn, real SQLite files) shared by the HTTP tests.

Tests isolate themselves by scope id (`fresh_scope`), not by server, to keep the suite fast.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from powercontext.config import (
    DatabaseConfig,
    HttpConfig,
    InferenceConfig,
    RuntimeConfig,
    ServerSettings,
)
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime, open_runtime
from powercontext.server import create_app
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.storage.sqlite.connections import ConnectionOptions
from powercontext.testing import QueryScriptedReranker
from tests.http.live import live_server, scripted_reranker, with_reranker

KEY_A = "key-for-scope-a-0001"
KEY_B = "key-for-scope-b-0002"
KEY_ALL = "key-for-every-scope-03"
KEY_FROM_FILE = "key-from-the-file-0004"
BODY_LIMIT = 65_536
BATCH_LIMIT = 50


@dataclass
class Served:
    url: str
    db_path: Path
    reranker: QueryScriptedReranker | None = None

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def _settings(
    db: Path, embedding: str, http: HttpConfig | None = None, **runtime: int
) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model=embedding),
        http=http or HttpConfig(),
        runtime=RuntimeConfig(**runtime),
    )


@pytest.fixture(scope="session")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """No auth, the hash embedder and a scripted reranker on every search."""
    db = tmp_path_factory.mktemp("open") / "open.db"
    reranker = scripted_reranker()

    factory = with_reranker(reranker)

    app = create_app(_settings(db, "hash"), runtime_factory=factory)
    with live_server(app) as server:
        yield Served(url=server.url, db_path=db, reranker=reranker)


@pytest.fixture(scope="session")
def bare_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """No embedding model, no reranker, small body and batch limits, a short busy timeout."""
    db = tmp_path_factory.mktemp("bare") / "bare.db"
    settings = _settings(
        db, "none", HttpConfig(max_body_bytes=BODY_LIMIT), max_batch_entries=BATCH_LIMIT
    )

    def factory(
        settings: ServerSettings, observer: SearchObserver
    ) -> AbstractAsyncContextManager[Runtime]:
        @asynccontextmanager
        async def opened() -> AsyncIterator[Runtime]:
            options = ConnectionOptions(busy_timeout_seconds=0.2)
            async with (
                await SqliteMemoryStore.open(db, options=options) as store,
                open_runtime(settings, store=store, search_observer=observer) as runtime,
            ):
                yield runtime

        return opened()

    with live_server(create_app(settings, runtime_factory=factory)) as server:
        yield Served(url=server.url, db_path=db)


@pytest.fixture(scope="session")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Auth on: keys from the JSON variable and from a keys file."""
    base = tmp_path_factory.mktemp("auth")
    keys_file = base / "keys.json"
    keys_file.write_text(json.dumps({KEY_FROM_FILE: ["scope-b"]}), encoding="utf-8")
    http = HttpConfig(
        api_keys=SecretStr(json.dumps({KEY_A: ["scope-a"], KEY_B: ["scope-b"], KEY_ALL: ["*"]})),
        api_keys_file=keys_file,
    )
    with live_server(create_app(_settings(base / "auth.db", "none", http))) as server:
        yield Served(url=server.url, db_path=base / "auth.db")


@pytest.fixture
def fresh_scope() -> str:
    return f"scope-{uuid.uuid4().hex[:12]}"
