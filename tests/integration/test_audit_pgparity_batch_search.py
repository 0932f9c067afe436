"""A batch search with more queries than RUNTIME_EMBEDDING_BATCH_SIZE, on PostgreSQL over
HTTP, embeds them in calls of at most that size and answers exactly what each search alone
answers; a provider capped at that size serves every mode of the batch (no fts fallback),
and the same batch on SQLite finds the same entries in the same order."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import pytest

from powercontext import open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime
from powercontext.server import create_app
from tests import pg_server
from tests.contract.test_audit_batch25_embedding_batch_size import BoundedEmbedder
from tests.http.live import live_server

pytestmark = pytest.mark.postgres

BATCH_SIZE = 3
TOPICS = ("deploy", "invoice", "garden", "travel", "concert", "recipe", "kettle", "harbor")
SCOPE = "s"


def _settings(url: str) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=url),
        inference=InferenceConfig(embedding_model="hash"),
        runtime=RuntimeConfig(embedding_batch_size=BATCH_SIZE, vector_backfill_interval_seconds=0),
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A live server on each backend, whose provider refuses calls of more than BATCH_SIZE."""
    workdir = tmp_path_factory.mktemp("pgparity-batch")
    urls = {
        "sqlite": f"sqlite:///{workdir / 'memory.db'}",
        "postgres": asyncio.run(pg_server.database_url(workdir)),
    }
    embedders = {backend: BoundedEmbedder(bound=BATCH_SIZE) for backend in urls}

    def factory(embedder: BoundedEmbedder) -> Any:
        def opened(
            settings: ServerSettings, observer: SearchObserver
        ) -> AbstractAsyncContextManager[Runtime]:
            return open_runtime(settings, embedding_model=embedder, search_observer=observer)

        return opened

    with (
        live_server(
            create_app(_settings(urls["sqlite"]), runtime_factory=factory(embedders["sqlite"]))
        ) as lite,
        live_server(
            create_app(_settings(urls["postgres"]), runtime_factory=factory(embedders["postgres"]))
        ) as pg,
    ):
        clients = {
            "sqlite": httpx.Client(base_url=lite.url, timeout=30),
            "postgres": httpx.Client(base_url=pg.url, timeout=30),
        }
        entries = [{"text": f"note {i} on the {t}"} for i in (1, 2) for t in TOPICS]
        for client in clients.values():
            wrote = client.post("/v1/memory/remember", json={"scope_id": SCOPE, "entries": entries})
            assert wrote.status_code == 200 and wrote.json()["vectors_pending"] == 0, wrote.text
        try:
            yield {"clients": clients, "embedders": embedders}
        finally:
            for client in clients.values():
                client.close()


def _searches(mode: str) -> list[dict[str, Any]]:
    return [{"query": f"the {topic}", "limit": 3, "mode": mode} for topic in TOPICS]


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
@pytest.mark.parametrize("mode", ["hybrid", "vector", "auto"])
def test_a_large_batch_equals_its_single_searches(
    served: dict[str, Any], mode: str, backend: str
) -> None:
    client: httpx.Client = served["clients"][backend]
    embedder: BoundedEmbedder = served["embedders"][backend]
    embedder.sizes.clear()
    batch = _ok(
        client.post(
            "/v1/memory/search/batch", json={"scope_id": SCOPE, "searches": _searches(mode)}
        )
    )
    sizes, embedder.sizes[:] = list(embedder.sizes), []
    assert max(sizes) <= BATCH_SIZE < len(TOPICS) and sum(sizes) == len(TOPICS), sizes
    singles = [
        _ok(client.post("/v1/memory/search", json={"scope_id": SCOPE, **search}))
        for search in _searches(mode)
    ]
    assert batch["pages"] == singles
    expected = "hybrid" if mode == "auto" else mode
    assert [page["mode"] for page in batch["pages"]] == [expected] * len(TOPICS)
    assert all(page["hits"] for page in batch["pages"])


def test_the_same_batch_leads_with_the_same_entries_on_both(served: dict[str, Any]) -> None:
    """The two notes on each topic lead on both. Not the rest: the other notes tie in float32
    as numpy computes them (SQLite keeps them by key) but not as pgvector does (it sums the
    norms in float32 by dimension), so their order may differ by backend."""
    found = {}
    for backend, client in served["clients"].items():
        batch = _ok(
            client.post(
                "/v1/memory/search/batch",
                json={"scope_id": SCOPE, "searches": _searches("hybrid")},
            )
        )
        found[backend] = [[hit["text"] for hit in page["hits"][:2]] for page in batch["pages"]]
    assert found["postgres"] == found["sqlite"]
    assert found["postgres"] == [[f"note {i} on the {t}" for i in (1, 2)] for t in TOPICS]


def test_a_failing_chunk_fails_the_batch_alike(served: dict[str, Any]) -> None:
    said = {}
    for backend, client in served["clients"].items():
        embedder: BoundedEmbedder = served["embedders"][backend]
        embedder.fail_queries = True
        try:
            refused = client.post(
                "/v1/memory/search/batch",
                json={"scope_id": SCOPE, "searches": _searches("hybrid")},
            )
            fallen = _ok(
                client.post(
                    "/v1/memory/search/batch",
                    json={"scope_id": SCOPE, "searches": _searches("auto")},
                )
            )
        finally:
            embedder.fail_queries = False
        said[backend] = (refused.status_code, refused.json()["error"]["message"])
        assert [page["mode"] for page in fallen["pages"]] == ["fts"] * len(TOPICS)
    assert said["postgres"] == said["sqlite"]
    assert said["postgres"][0] == 422 and "searches.0:" in said["postgres"][1], said
