"""Times on the HTTP v1 wire are ISO 8601 strings, as the OpenAPI document says: a JSON number
(or a string of digits) is refused with a 422 naming ISO 8601, never read as Unix seconds
(`"occurred_at": 20240101` was stored as 1970-08-23), on a real server."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from powercontext.client import SyncPowerContextClient
from powercontext.memory import RememberMemoryRequest
from powercontext.memory.filters import MemoryFilter
from tests.http.conftest import Served

# Each was read as Unix seconds before; booleans were refused without saying what is expected.
NOT_TIMES: list[Any] = [20240101, 0, -1, 1.5, 1_700_000_000, True, False, "20240101", "-1", "1.5"]
FILTER_TIMES = ("created_after", "created_before", "occurred_after", "occurred_before")


def _refused(response: httpx.Response, loc: list[str]) -> str:
    """The envelope of every validation error, naming ISO 8601 at `loc`."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    error = body["error"]
    assert error["code"] == "validation_error"
    where = ".".join(loc[1:])
    assert error["message"].startswith(f"{where}: Input should be an ISO 8601 date-time"), error
    first = error["details"]["errors"][0]
    assert first["loc"] == loc and first["type"] == "datetime_type"
    assert "input" not in first
    message: str = error["message"]
    return message


def _head(client: httpx.Client, scope: str) -> Any:
    return client.post("/v1/memory/head", json={"scope_id": scope}).json()["memory_ref"]


@pytest.mark.parametrize("value", NOT_TIMES)
def test_a_number_as_occurred_at_is_refused_and_nothing_is_written(
    bare_server: Served, fresh_scope: str, value: Any
) -> None:
    one = {"scope_id": fresh_scope, "text": "x", "occurred_at": value}
    batch = {
        "scope_id": fresh_scope,
        "entries": [{"text": "a"}, {"text": "b", "occurred_at": value}],
    }
    line = json.dumps({"text": "x", "occurred_at": value}) + "\n"
    with bare_server.client() as client:
        said = _refused(client.post("/v1/memory/remember", json=one), ["body", "occurred_at"])
        _refused(
            client.post("/v1/memory/remember", json=batch),
            ["body", "entries", "1", "occurred_at"],
        )
        streamed = client.post(
            "/v1/memory/remember/stream",
            params={"scope_id": fresh_scope},
            content=line.encode(),
            headers={"content-type": "application/x-ndjson"},
        )
        head = _head(client, fresh_scope)
    assert ("a boolean" in said) == isinstance(value, bool)
    assert streamed.status_code == 422, streamed.text
    assert streamed.json()["error"]["message"].startswith(
        "line 1: occurred_at: Input should be an ISO 8601 date-time"
    )
    assert head is None


@pytest.mark.parametrize("field", FILTER_TIMES)
@pytest.mark.parametrize("value", [20240101, 1.5, True, "1700000000"])
def test_a_number_as_a_filter_time_is_refused_on_every_route(
    bare_server: Served, fresh_scope: str, field: str, value: Any
) -> None:
    where = {field: value}
    with bare_server.client() as client:
        _refused(
            client.post(
                "/v1/memory/search", json={"scope_id": fresh_scope, "query": "q", "filter": where}
            ),
            ["body", "filter", field],
        )
        _refused(
            client.post(
                "/v1/memory/search/batch",
                json={
                    "scope_id": fresh_scope,
                    "searches": [{"query": "q"}, {"query": "q", "filter": where}],
                },
            ),
            ["body", "searches", "1", "filter", field],
        )
        _refused(
            client.post("/v1/memory/entries/list", json={"scope_id": fresh_scope, "filter": where}),
            ["body", "filter", field],
        )


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("2023-05-08T13:56:00Z", "2023-05-08T13:56:00Z"),
        ("2023-05-08T13:56:00z", "2023-05-08T13:56:00Z"),
        ("2023-05-08T13:56:00+02:00", "2023-05-08T11:56:00Z"),
        ("2023-05-08T13:56:00.250-01:30", "2023-05-08T15:26:00.250000Z"),
        ("2023-05-08 13:56", "2023-05-08T13:56:00Z"),
        ("2023-05-08T13:56:00", "2023-05-08T13:56:00Z"),  # no offset: UTC, as before
        ("2023-05-08", "2023-05-08T00:00:00Z"),  # a date alone: its midnight, UTC
    ],
)
def test_every_iso_string_taken_before_is_taken_the_same(
    bare_server: Served, fresh_scope: str, sent: str, stored: str
) -> None:
    with bare_server.client() as client:
        wrote = client.post(
            "/v1/memory/remember", json={"scope_id": fresh_scope, "text": "x", "occurred_at": sent}
        )
    assert wrote.status_code == 200, wrote.text
    assert wrote.json()["entries"][0]["occurred_at"] == stored


def test_filter_times_take_iso_strings_with_a_zone_and_refuse_naive_ones(
    bare_server: Served, fresh_scope: str
) -> None:
    with bare_server.client() as client:
        body = {
            "scope_id": fresh_scope,
            "text": "heron nest",
            "occurred_at": "2023-05-08T12:00:00Z",
        }
        assert client.post("/v1/memory/remember", json=body).status_code == 200

        def found(where: dict[str, Any]) -> int | str:
            search = {"scope_id": fresh_scope, "query": "heron", "mode": "fts", "filter": where}
            response = client.post("/v1/memory/search", json=search)
            if response.status_code != 200:
                return str(response.json()["error"]["message"])
            return len(response.json()["hits"])

        assert found({"occurred_after": "2023-05-08T13:00:00+02:00"}) == 1  # 11:00Z
        assert found({"occurred_after": "2023-05-08T12:00:01Z"}) == 0
        assert found({"occurred_before": "2023-05-08T12:00:01z"}) == 1
        assert found({"created_before": "2000-01-01T00:00:00Z"}) == 0
        # A naive filter time was refused before and still is, with the same message.
        naive = found({"occurred_after": "2023-05-08T11:00:00"})
        assert naive == (
            "filter.occurred_after: Value error, filter times need a time zone "
            "(e.g. 2026-01-01T00:00:00Z)"
        )


def test_the_sdk_sends_times_as_strings_and_they_are_read_back(
    bare_server: Served, fresh_scope: str
) -> None:
    when = datetime(2023, 5, 8, 13, 56, 7, 125000, tzinfo=UTC)
    with SyncPowerContextClient(bare_server.url) as client:
        memory = client.memory.for_scope(fresh_scope)
        written = memory.remember(RememberMemoryRequest(text="sdk time", occurred_at=when))
        listed = memory.list(
            where=MemoryFilter(occurred_after=when, occurred_before=when.replace(second=8))
        )
    assert written.entries[0].occurred_at == when
    assert [entry.entry_id for entry in listed.entries] == [written.entries[0].entry_id]
