"""`/v1/memory/search` probed at its edges as a user of search services would, on a live
server with the hash embedder: every odd query is a sensible page or a 422 naming `query`,
the documented bounds hold, and fts, vector and hybrid pages carry the fields docs/http.md
promises, in the same order over HTTP as in process and on every repeat."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext import ServerSettings
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig
from powercontext.server import create_app
from tests.http.conftest import Served
from tests.http.live import live_server

SCOPE = "audit"
ENTRIES: list[dict[str, Any]] = [
    {
        "kind": "decision",
        "text": "We deploy on Fridays after the 14:00 review.",
        "metadata": {"project": "atlas", "priority": 2, "owner": "ana"},
        "thread": "t1",
        "occurred_at": "2026-01-05T10:00:00Z",
    },
    {
        "text": "Staging runs on k3s.",
        "metadata": {"project": "zeus", "priority": 1},
        "thread": "t1",
        "occurred_at": "2025-06-01T00:00:00Z",
    },
    {"text": "Ana owns the release notes.", "metadata": {"speaker": "Caroline", "priority": "2"}},
    {"text": "東京の会議は月曜日です。"},
    {"text": "Party time 🎉 with cake 🍰"},
    {"text": "مرحبا بالعالم اجتماع الفريق"},
    {"text": "Der Zug fährt um 8 Uhr nach München."},
    {"text": "x"},
    {"text": "the of and"},
    {"text": "Caroline said she loves hiking.", "metadata": {"speaker": "Caroline"}},
]
MODES = ("fts", "vector", "hybrid")


def _settings(db: Path, embedding: str) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model=embedding),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=0),
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A keyless server with the hash embedder and no reranker, one scope written."""
    db = tmp_path_factory.mktemp("audit-search") / "memory.db"
    with live_server(create_app(_settings(db, "hash"))) as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            written = client.post(
                "/v1/memory/remember", json={"scope_id": SCOPE, "entries": ENTRIES}
            )
            assert written.status_code == 200, written.text
        yield Served(url=server.url, db_path=db)


def _search(client: httpx.Client, **body: Any) -> httpx.Response:
    return client.post("/v1/memory/search", json={"scope_id": SCOPE, **body})


def _texts(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [hit["text"] for hit in response.json()["hits"]]


def _field_error(response: httpx.Response, *loc: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert ["body", *loc] in [e["loc"] for e in error["details"]["errors"]], error


@pytest.mark.parametrize(
    "query",
    ["", "   ", "\t\n\u3000", "\u00a0", "deploy\x00", "x" * 8193, "東" * 2731],
    ids=["empty", "blank", "whitespace", "nbsp", "nul", "chars+1", "bytes+1"],
)
def test_a_query_that_cannot_be_searched_is_a_422_naming_query(served: Served, query: str) -> None:
    with served.client() as client:
        for mode in ("auto", *MODES):
            _field_error(_search(client, query=query, mode=mode), "query")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("the of and", "the of and"),
        ("x", "x"),
        ("東京", "東京の会議は月曜日です。"),
        ("会議", "東京の会議は月曜日です。"),
        ("🍰 cake", "Party time 🎉 with cake 🍰"),
        ("München 東京", "東京の会議は月曜日です。"),
        ("Mu\u0308nchen", "Der Zug fährt um 8 Uhr nach München."),  # NFD finds NFC
        ("اجتماع", "مرحبا بالعالم اجتماع الفريق"),
        ("deploy\x01\x1f", "We deploy on Fridays after the 14:00 review."),
        ('"k3s" OR 1=1 -- * NEAR(', "Staging runs on k3s."),
        ("Caroline", "Caroline said she loves hiking."),
    ],
)
def test_an_odd_query_finds_its_obvious_match_first(
    served: Served, query: str, expected: str
) -> None:
    with served.client() as client:
        for mode in ("auto", "fts", "hybrid"):
            assert _texts(_search(client, query=query, mode=mode))[:1] == [expected], mode


def test_a_query_only_naming_a_participant_finds_their_entries_boosted(served: Served) -> None:
    with served.client() as client:
        hits = _search(client, query="caroline", mode="fts").json()["hits"]
    assert [h["text"] for h in hits] == [
        "Caroline said she loves hiking.",
        "Ana owns the release notes.",  # found through its speaker alone
    ]
    for rank, hit in enumerate(hits, start=1):
        assert hit["score"] == pytest.approx(1.5 / (20 + rank))  # docs/http.md: k 20, x1.5


@pytest.mark.parametrize("query", ["?!.,;", "___", "\u200b", "x" * 8192, "森" * 2730])
def test_a_query_without_a_match_is_an_empty_page(served: Served, query: str) -> None:
    with served.client() as client:
        for mode in ("auto", *MODES):
            response = _search(client, query=query, mode=mode)
            assert response.status_code == 200, response.text
            page = response.json()
            assert page["memory_ref"] == {"scope_id": SCOPE, "revision": 1}
            assert page["hits"] == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("limit", 0),
        ("limit", 101),
        ("limit", 1.5),
        ("limit", "5"),
        ("limit", True),
        ("limit", None),
        ("mode", "semantic"),
        ("mode", "FTS"),
        ("min_similarity", 1.0001),
        ("min_similarity", -1.5),
        ("min_similarity", "0.5"),
        ("min_score", "1"),
        ("min_score", True),
        ("revision", 0),
        ("revision", 2**63),
        ("revision", "1"),
        ("explain", True),
        ("cursor", "abc"),
    ],
)
def test_a_bad_parameter_is_a_422_naming_it(served: Served, field: str, value: Any) -> None:
    with served.client() as client:
        _field_error(_search(client, query="deploy", **{field: value}), field)


def test_the_limits_and_floors_at_their_bounds(served: Served) -> None:
    with served.client() as client:
        assert len(_texts(_search(client, query="deploy", limit=1))) == 1
        assert len(_texts(_search(client, query="the", limit=100, mode="fts"))) >= 3
        # 10.0 is an integer to JSON Schema
        assert len(_texts(_search(client, query="the", limit=10.0, mode="vector"))) <= 10
        everything = _search(client, query="deploy", mode="vector", min_similarity=-1, limit=100)
        assert len(_texts(everything)) == len(ENTRIES)
        assert _texts(_search(client, query="deploy", mode="vector", min_similarity=1)) == []
        assert _texts(_search(client, query="deploy", mode="fts", min_score=1e308)) == []
        for raw in ('"min_score": NaN', '"min_similarity": Infinity'):
            response = client.post(
                "/v1/memory/search",
                content=f'{{"scope_id": "{SCOPE}", "query": "deploy", {raw}}}',
                headers={"content-type": "application/json"},
            )
            _field_error(response, raw.split('"')[1])


def test_vector_and_hybrid_without_an_embedder_are_422_and_auto_is_fts(
    bare_server: Served, fresh_scope: str
) -> None:
    with bare_server.client() as client:
        client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": "We deploy."})
        auto = client.post("/v1/memory/search", json={"scope_id": fresh_scope, "query": "deploy"})
        assert auto.json()["mode"] == "fts"
        assert _texts(auto) == ["We deploy."]
        for scope in (fresh_scope, f"{fresh_scope}-never-written"):
            for mode in ("vector", "hybrid"):
                response = client.post(
                    "/v1/memory/search", json={"scope_id": scope, "query": "deploy", "mode": mode}
                )
                assert response.status_code == 422, response.text
                assert response.json()["error"]["code"] == "capability_not_supported"
                assert "embedding model" in response.json()["error"]["message"]
