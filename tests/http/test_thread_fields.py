"""`thread` and `occurred_at` over HTTP v1 and the SDK: stored, returned, validated."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from powercontext.client import SyncPowerContextClient
from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from tests.http.conftest import Served
from tests.http.test_mcp import mcp_client


@pytest.mark.parametrize(
    "fields",
    [
        {"thread": "   "},
        {"thread": "t" * 257},
        {"thread": 5},
        {"occurred_at": "not a date"},
        {"occurred_at": "2023-02-30T10:00:00Z"},
    ],
)
def test_bad_thread_or_time_is_a_422(
    bare_server: Served, fresh_scope: str, fields: dict[str, Any]
) -> None:
    with bare_server.client() as client:
        one = client.post(
            "/v1/memory/remember", json={"scope_id": fresh_scope, "text": "ok", **fields}
        )
        batch = client.post(
            "/v1/memory/remember",
            json={"scope_id": fresh_scope, "entries": [{"text": "ok", **fields}]},
        )
    for response in (one, batch):
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "validation_error"
        names = {str(e["loc"][-1]) for e in response.json()["error"]["details"]["errors"]}
        assert names & {"thread", "occurred_at"}, names


def test_written_values_come_back_on_entries_and_hits(
    open_server: Served, fresh_scope: str
) -> None:
    with open_server.client() as client:
        written = client.post(
            "/v1/memory/remember",
            json={
                "scope_id": fresh_scope,
                "text": "We went camping at the lake",
                "thread": "chat-1",
                "occurred_at": "2023-05-08T13:56:00+02:00",
            },
        ).json()
        plain = client.post(
            "/v1/memory/remember", json={"scope_id": fresh_scope, "text": "no thread here"}
        ).json()
    (entry,) = written["entries"]
    assert entry["thread"] == "chat-1"
    assert entry["occurred_at"] == "2023-05-08T11:56:00Z"
    (other,) = plain["entries"]
    assert other["thread"] is None
    assert other["occurred_at"] == other["created_at"]  # defaults to the write time

    with SyncPowerContextClient(open_server.url) as sdk:
        memory = sdk.memory.for_scope(fresh_scope)
        page = memory.search(SearchMemoryRequest(query="camping lake", mode="fts"))
        result = memory.remember(
            RememberMemoryRequest(
                text="later turn", thread="chat-1", occurred_at=datetime(2023, 5, 9)
            )
        )
    hit = next(h for h in page.hits if h.thread == "chat-1")
    assert hit.occurred_at == datetime(2023, 5, 8, 11, 56, tzinfo=UTC)
    # a naive time is read as UTC
    assert result.entries[0].occurred_at == datetime(2023, 5, 9, tzinfo=UTC)


async def test_the_mcp_remember_tool_takes_thread_and_time(
    open_server: Served, fresh_scope: str
) -> None:
    async with mcp_client(open_server) as client:
        result = await client.call_tool(
            "remember",
            {
                "scope_id": fresh_scope,
                "text": "the heron came back",
                "thread": "walk-3",
                "occurred_at": "2023-05-08T10:00:00Z",
            },
        )
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    (entry,) = result.structured_content["entries"]
    assert entry["thread"] == "walk-3" and entry["occurred_at"] == "2023-05-08T10:00:00Z"
