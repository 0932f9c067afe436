"""The query's length over HTTP is the runtime's rule: UTF-8 bytes of the normalized query,
counted after stripping. A padded query within the limit once stripped gets the page the
runtime gives in process, in a single search and in a batch; one over it is still a 422."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from powercontext import open_runtime
from powercontext.memory import MemorySearchPage, SearchMemoryRequest
from powercontext.memory.values import MAX_QUERY_BYTES, MAX_TEXT_BYTES
from powercontext.server import create_app
from powercontext.server.search_schemas import BatchSearchItem, SearchRequest
from tests.http.conftest import Served
from tests.http.live import live_server
from tests.runtime_settings import sqlite_file_settings

SCOPE = "padded"
# At the limit once stripped (8192 bytes), over it in characters before.
CORE = "alpha " + "z" * (MAX_QUERY_BYTES - len("alpha "))
PADDED = ["  " + CORE + "\n\t", "\u3000" * 40 + CORE, CORE + " " * 1000]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("audit-small-query") / "memory.db"
    with live_server(create_app(sqlite_file_settings(db))) as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            entries = [{"text": "alpha beta"}, {"text": "gamma delta"}]
            written = client.post(
                "/v1/memory/remember", json={"scope_id": SCOPE, "entries": entries}
            )
            assert written.status_code == 200, written.text
        yield Served(url=server.url, db_path=db)


def _hits(page: dict[str, Any]) -> list[tuple[str, float, list[str]]]:
    return [(h["citation"]["entry_version_id"], h["score"], h["matched_by"]) for h in page["hits"]]


def _local_hits(page: MemorySearchPage) -> list[tuple[str, float, list[str]]]:
    return [(h.entry_version_id, h.score, list(h.matched_by)) for h in page.hits]


async def test_a_padded_query_within_the_limit_gets_the_in_process_page(served: Served) -> None:
    assert all(len(query) > MAX_QUERY_BYTES for query in PADDED)
    async with open_runtime(sqlite_file_settings(served.db_path)) as runtime:
        memory = runtime.memory.for_scope(SCOPE)
        with served.client() as client:
            for query in PADDED:
                for mode in ("fts", "hybrid"):
                    local = await memory.search(SearchMemoryRequest(query=query, mode=mode))
                    expected = _local_hits(local)
                    assert local.hits and local.hits[0].text == "alpha beta"
                    one = client.post(
                        "/v1/memory/search", json={"scope_id": SCOPE, "query": query, "mode": mode}
                    )
                    assert one.status_code == 200, one.text[:500]
                    assert one.json()["mode"] == local.mode
                    assert _hits(one.json()) == expected
                    batch = client.post(
                        "/v1/memory/search/batch",
                        json={"scope_id": SCOPE, "searches": [{"query": query, "mode": mode}]},
                    )
                    assert batch.status_code == 200, batch.text[:500]
                    assert _hits(batch.json()["pages"][0]) == expected


@pytest.mark.parametrize(
    "query",
    ["  " + CORE + "z  ", "é" * (MAX_QUERY_BYTES // 2 + 1)],  # 8193 and 8194 bytes once stripped
)
def test_a_query_over_the_limit_once_stripped_is_still_refused(served: Served, query: str) -> None:
    with pytest.raises(ValueError, match="at most 8192 are allowed"):
        SearchMemoryRequest(query=query)
    with served.client() as client:
        one = client.post("/v1/memory/search", json={"scope_id": SCOPE, "query": query})
        batch = client.post(
            "/v1/memory/search/batch", json={"scope_id": SCOPE, "searches": [{"query": query}]}
        )
    for response, loc in ((one, ["body", "query"]), (batch, ["body", "searches", "0", "query"])):
        assert response.status_code == 422, response.text[:500]
        error = response.json()["error"]
        assert error["code"] == "validation_error"
        assert loc in [e["loc"] for e in error["details"]["errors"]], error


def test_the_contract_still_publishes_the_limit_and_says_it_counts_after_stripping(
    served: Served,
) -> None:
    with served.client() as client:
        committed = client.get("/openapi.json").json()["components"]["schemas"]
    for model in (SearchRequest, BatchSearchItem):
        generated = model.model_json_schema()["properties"]["query"]
        assert committed[model.__name__]["properties"]["query"] == generated
        assert generated["maxLength"] == MAX_QUERY_BYTES
        assert "stripped" in generated["description"]


# The entry text follows the same rule (MAX_TEXT_BYTES, counted after stripping).
TEXT_CORE = "padded " + "t" * (MAX_TEXT_BYTES - len("padded "))


def test_a_padded_text_within_the_limit_is_stored_stripped(served: Served) -> None:
    padded = "  " + TEXT_CORE + "\n\t"
    assert len(padded) > MAX_TEXT_BYTES
    with served.client() as client:
        one = client.post("/v1/memory/remember", json={"scope_id": "texts", "text": padded})
        assert one.status_code == 200, one.text[:500]
        [entry] = one.json()["entries"]
        assert entry["text"] == TEXT_CORE
        citation = entry["citation"]
        revised = client.post(
            "/v1/memory/entries/revise",
            json={"scope_id": "texts", "citation": citation, "text": TEXT_CORE + " " * 600},
        )
        assert revised.status_code == 200, revised.text[:500]
        over = client.post(
            "/v1/memory/remember", json={"scope_id": "texts", "text": " " + TEXT_CORE + "x "}
        )
    assert over.status_code == 422, over.text[:300]
    assert ["body", "text"] in [e["loc"] for e in over.json()["error"]["details"]["errors"]]


@pytest.mark.parametrize("blank", ["", "   "])
def test_an_empty_query_or_text_gets_the_runtimes_message(served: Served, blank: str) -> None:
    with served.client() as client:
        searched = client.post("/v1/memory/search", json={"scope_id": SCOPE, "query": blank})
        wrote = client.post("/v1/memory/remember", json={"scope_id": SCOPE, "text": blank})
    assert searched.status_code == 422 and wrote.status_code == 422
    assert searched.json()["error"]["message"] == "query: Value error, query must not be blank"
    assert wrote.json()["error"]["message"] == "text: Value error, text must not be blank"
