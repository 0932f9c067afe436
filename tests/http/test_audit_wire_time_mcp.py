"""MCP tool arguments take times as the HTTP v1 bodies do (they are the same models): an ISO
8601 string, never a number read as Unix seconds, over the live server's /mcp."""

from __future__ import annotations

from typing import Any

import pytest

from tests.http.conftest import Served
from tests.http.test_mcp import _error_text, _ok, mcp_client

ISO_REFUSAL = "Input should be an ISO 8601 date-time string"


@pytest.mark.parametrize("value", [20240101, 1.5, 0, True, "20240101"])
async def test_tools_refuse_a_number_as_a_time_and_write_nothing(
    open_server: Served, fresh_scope: str, value: Any
) -> None:
    where = {"created_after": value}
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("remember", {"text": "x", "occurred_at": value}, "occurred_at"),
        (
            "remember_batch",
            {"entries": [{"text": "a"}, {"text": "b", "occurred_at": value}]},
            "entries.1.occurred_at",
        ),
        ("search", {"query": "q", "filter": where}, "filter.created_after"),
        (
            "search_batch",
            {"searches": [{"query": "q", "filter": where}]},
            "searches.0.filter.created_after",
        ),
        ("list_entries", {"filter": where}, "filter.created_after"),
    ]
    async with mcp_client(open_server) as client:
        for tool, arguments, at in calls:
            result = await client.call_tool(tool, {"scope_id": fresh_scope, **arguments})
            text = _error_text(result)
            assert text.startswith(f"validation_error: {at}: {ISO_REFUSAL}"), (tool, text)
        head = _ok(await client.call_tool("head", {"scope_id": fresh_scope}))
    assert head["memory_ref"] is None


async def test_tools_take_iso_strings_as_before(open_server: Served, fresh_scope: str) -> None:
    async with mcp_client(open_server) as client:
        wrote = _ok(
            await client.call_tool(
                "remember",
                {"scope_id": fresh_scope, "text": "heron", "occurred_at": "2023-05-08T13:56:00"},
            )
        )
        listed = _ok(
            await client.call_tool(
                "list_entries",
                {
                    "scope_id": fresh_scope,
                    "filter": {"occurred_after": "2023-05-08T15:56:00+02:00"},
                },
            )
        )
    # No offset: UTC, as before; the filter bound with its offset is the same instant.
    assert wrote["entries"][0]["occurred_at"] == "2023-05-08T13:56:00Z"
    assert [e["entry_id"] for e in listed["entries"]] == [wrote["entries"][0]["entry_id"]]
