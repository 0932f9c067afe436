"""`/v1/memory/search` checked for consistency from outside: every filter operator of
docs/http.md in every channel, as-of revisions, an unknown scope, the hit fields each mode
promises, the same hits over HTTP as in process, and one order on every repeat (ties
included) whatever the limit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from powercontext import open_runtime
from powercontext.memory import SearchMemoryRequest
from powercontext.server import create_app
from tests.http.conftest import Served
from tests.http.live import live_server
from tests.runtime_settings import sqlite_file_settings

SCOPE = "consistency"
TIES = "ties"
MODES = ("fts", "vector", "hybrid")
# Every entry holds "plan", so each filter alone decides which come back.
ENTRIES: list[dict[str, Any]] = [
    {
        "kind": "decision",
        "text": "plan A: deploy on Fridays",
        "metadata": {"project": "atlas", "priority": 2, "owner": "ana", "nested": {"a": 1}},
        "thread": "t1",
        "occurred_at": "2026-01-05T10:00:00Z",
    },
    {
        "text": "plan B: staging on k3s",
        "metadata": {"project": "zeus", "priority": 1},
        "thread": "t1",
        "occurred_at": "2025-06-01T00:00:00Z",
    },
    {"text": "plan C: release notes", "metadata": {"priority": "2"}, "thread": "t2"},
    {"text": "plan D: budget review", "metadata": {"priority": 3.5}},
]
FILTERS: list[tuple[dict[str, Any], set[str]]] = [
    ({"kinds": ["decision"]}, {"A"}),
    ({"kinds": ["nope"]}, set()),
    ({"metadata": {"project": {"eq": "atlas"}}}, {"A"}),
    ({"metadata": {"project": {"one_of": ["atlas", "zeus"]}}}, {"A", "B"}),
    ({"metadata": {"priority": {"eq": 2}}}, {"A"}),  # the string "2" is not the number 2
    ({"metadata": {"priority": {"eq": "2"}}}, {"C"}),
    ({"metadata": {"priority": {"gt": 1}}}, {"A", "D"}),
    ({"metadata": {"priority": {"gte": 1, "lt": 3}}}, {"A", "B"}),
    ({"metadata": {"priority": {"lte": "2"}}}, {"C"}),  # strings with strings
    ({"metadata": {"priority": {"gt": 2, "lt": 1}}}, set()),
    ({"metadata": {"owner": {"exists": True}}}, {"A"}),
    ({"metadata": {"owner": {"exists": False}}}, {"B", "C", "D"}),
    ({"metadata": {"nested.a": {"eq": 1}}}, set()),  # keys are top-level only
    ({"threads": ["t1"]}, {"A", "B"}),
    ({"threads": ["t2", "nope"]}, {"C"}),
    ({"occurred_before": "2026-01-01T00:00:00Z"}, {"B"}),
    ({"occurred_after": "2026-01-01T00:00:00Z", "threads": ["t1"]}, {"A"}),
    ({"created_before": "2000-01-01T00:00:00Z"}, set()),
    ({}, {"A", "B", "C", "D"}),
]
BAD_FILTERS: list[tuple[dict[str, Any], list[str]]] = [
    ({"kinds": []}, ["kinds"]),
    ({"kinds": "decision"}, ["kinds"]),
    ({"metadata": {"project": {"one_of": []}}}, ["metadata", "project", "one_of"]),
    ({"metadata": {"priority": {"gt": True}}}, ["metadata", "priority", "gt"]),
    ({"metadata": {"priority": {}}}, ["metadata", "priority"]),
    ({"metadata": {"priority": {"like": 1}}}, ["metadata", "priority", "like"]),
    ({"metadata": {"priority": {"gt": 2**63}}}, ["metadata", "priority", "gt"]),
    ({"metadata": {"project": {"eq": "a\x00"}}}, ["metadata", "project", "eq"]),
    ({"metadata": {"owner": {"exists": "yes"}}}, ["metadata", "owner", "exists"]),
    ({"threads": [" "]}, ["threads", "0"]),
    ({"occurred_after": "2026-01-01T00:00:00"}, ["occurred_after"]),
    ({"occurred_after": "2026-13-01T00:00:00Z"}, ["occurred_after"]),
    ({"unknown": 1}, ["unknown"]),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("audit-consistency") / "memory.db"
    with live_server(create_app(sqlite_file_settings(db))) as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            for scope, entries in (
                (SCOPE, ENTRIES),
                (TIES, [{"text": "same words here"} for _ in range(60)]),
            ):
                written = client.post(
                    "/v1/memory/remember", json={"scope_id": scope, "entries": entries}
                )
                assert written.status_code == 200, written.text
        yield Served(url=server.url, db_path=db)


def _search(client: httpx.Client, scope: str = SCOPE, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/memory/search", json={"scope_id": scope, **body})
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


def _labels(page: dict[str, Any]) -> set[str]:
    return {hit["text"].split(":")[0].removeprefix("plan ") for hit in page["hits"]}


@pytest.mark.parametrize(("where", "expected"), FILTERS)
def test_each_filter_keeps_exactly_its_entries_in_every_mode(
    served: Served, where: dict[str, Any], expected: set[str]
) -> None:
    with served.client() as client:
        for mode in MODES:
            page = _search(
                client, query="plan", mode=mode, filter=where, min_similarity=-1, limit=100
            )
            assert _labels(page) == expected, mode


@pytest.mark.parametrize(("where", "loc"), BAD_FILTERS)
def test_a_bad_filter_is_a_422_naming_the_condition(
    served: Served, where: dict[str, Any], loc: list[str]
) -> None:
    with served.client() as client:
        response = client.post(
            "/v1/memory/search", json={"scope_id": SCOPE, "query": "plan", "filter": where}
        )
    assert response.status_code == 422, response.text
    locs = [e["loc"] for e in response.json()["error"]["details"]["errors"]]
    assert ["body", "filter", *loc] in locs, locs


def test_as_of_revisions_and_an_unknown_scope(served: Served, fresh_scope: str) -> None:
    with served.client() as client:
        for text in ("alpha one", "alpha two"):
            client.post("/v1/memory/remember", json={"scope_id": fresh_scope, "text": text})
        first = _search(client, fresh_scope, query="alpha", mode="fts")["hits"][0]
        retired = client.post(
            "/v1/memory/entries/retire",
            json={"scope_id": fresh_scope, "citation": first["citation"]},
        )
        assert retired.json()["memory_ref"]["revision"] == 3
        for mode in MODES:
            at = {
                rev: _search(client, fresh_scope, query="alpha", mode=mode, revision=rev)
                for rev in (1, 2, 3)
            }
            assert [len(at[rev]["hits"]) for rev in (1, 2, 3)] == [1, 2, 1], mode
            for rev, page in at.items():
                assert page["memory_ref"] == {"scope_id": fresh_scope, "revision": rev}
                assert {h["citation"]["memory_ref"]["revision"] for h in page["hits"]} == {rev}
            future = client.post(
                "/v1/memory/search",
                json={"scope_id": fresh_scope, "query": "alpha", "mode": mode, "revision": 4},
            )
            assert future.status_code == 404, future.text
            assert future.json()["error"]["code"] == "not_found"
            never = _search(client, f"{fresh_scope}-never", query="alpha", mode=mode)
            assert never["memory_ref"] is None
            assert never["hits"] == []
            unknown = client.post(
                "/v1/memory/search",
                json={
                    "scope_id": f"{fresh_scope}-never",
                    "query": "a",
                    "mode": mode,
                    "revision": 1,
                },
            )
            assert unknown.status_code == 404, unknown.text


def test_every_mode_gives_hits_with_the_documented_fields(served: Served) -> None:
    with served.client() as client:
        for mode in MODES:
            page = _search(client, query="plan deploy", mode=mode, min_similarity=-1)
            assert page["mode"] == mode
            assert page["hits"], mode
            scores = [hit["score"] for hit in page["hits"]]
            assert scores == sorted(scores, reverse=True)
            for hit in page["hits"]:
                assert set(hit) >= {"citation", "kind", "text", "metadata", "score"}
                assert set(hit) >= {"matched_by", "thread", "occurred_at", "explain"}
                assert set(hit["citation"]) == {"memory_ref", "entry_id", "entry_version_id"}
                assert hit["occurred_at"] is not None
                assert sorted(e["channel"] for e in hit["explain"]) == sorted(hit["matched_by"])
                assert set(hit["matched_by"]) <= ({"fts", "vector"} if mode == "hybrid" else {mode})
        deploy = _search(client, query="deploy", mode="fts")["hits"][0]
    assert deploy["thread"] == "t1"
    assert deploy["occurred_at"] == "2026-01-05T10:00:00Z"
    assert deploy["metadata"]["project"] == "atlas"


QUERIES = ["plan", "deploy staging", "release notes", "budget", "plan review k3s"]


async def test_http_and_in_process_give_the_same_hits_in_the_same_order(
    served: Served,
) -> None:
    async with open_runtime(sqlite_file_settings(served.db_path)) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        with httpx.Client(base_url=served.url, timeout=30) as client:
            for query in QUERIES:
                for mode in ("auto", *MODES):
                    for extra in ({}, {"limit": 2}, {"min_similarity": -1.0}):
                        local = await memory.search(
                            SearchMemoryRequest(query=query, mode=mode, **extra)
                        )
                        remote = _search(client, query=query, mode=mode, **extra)
                        assert remote["mode"] == local.mode
                        assert [
                            (h["citation"]["entry_version_id"], h["score"], h["matched_by"])
                            for h in remote["hits"]
                        ] == [(h.entry_version_id, h.score, list(h.matched_by)) for h in local.hits]


def test_ties_are_broken_the_same_way_every_time_and_at_every_limit(served: Served) -> None:
    with served.client() as client:
        for mode in MODES:
            full = [
                h["citation"]["entry_id"]
                for h in _search(client, TIES, query="same words", mode=mode, limit=60)["hits"]
            ]
            assert len(full) == 60 == len(set(full))
            for limit in (1, 7, 33, 60):
                for _ in range(2):
                    page = _search(client, TIES, query="same words", mode=mode, limit=limit)
                    assert [h["citation"]["entry_id"] for h in page["hits"]] == full[:limit]
