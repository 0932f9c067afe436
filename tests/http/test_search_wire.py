"""The search answer is validated in one call from the runtime hits (server CPU per request);
it must stay exactly the answer a validated build gives, on the wire and as a model."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from powercontext.memory.models import ChannelScore, MemoryHit, MemoryRef, MemorySearchPage
from powercontext.server.search_schemas import HitModel, SearchResponse
from powercontext.server.translate import search_response


def _page() -> MemorySearchPage:
    ref = MemoryRef(scope_id="team-a", revision=7)
    full = MemoryHit(
        memory_ref=ref,
        entry_id="e1",
        entry_version_id="v1",
        kind="preference",
        text="prefers tea, not coffee",
        metadata={"source": "chat", "tags": ["drinks"], "weight": 2, "nested": {"x": None}},
        score=0.0325,
        matched_by=("fts", "vector"),
        thread="session-9",
        occurred_at=datetime(2026, 3, 1, 12, 30, tzinfo=UTC),
        explain=(
            ChannelScore(channel="fts", rank=1, score=7.25),
            ChannelScore(channel="vector", rank=3, score=0.81),
        ),
    )
    bare = MemoryHit(
        memory_ref=ref,
        entry_id="e2",
        entry_version_id="v2",
        kind="fact",
        text="the office is on floor 3",
        metadata={},
        score=0.0161,
        matched_by=("fts",),
    )
    return MemorySearchPage(memory_ref=ref, mode="hybrid", hits=(full, bare))


def _validated(page: MemorySearchPage, report_status: bool) -> SearchResponse:
    """What the answer was before: every wire model validated from the runtime's dump."""
    hits = []
    for hit in page.hits:
        fields = hit.model_dump()
        ref = fields.pop("memory_ref")
        citation = {
            "memory_ref": ref,
            "entry_id": fields.pop("entry_id"),
            "entry_version_id": fields.pop("entry_version_id"),
        }
        hits.append(HitModel.model_validate(fields | {"citation": citation}))
    assert page.memory_ref is not None
    return SearchResponse.model_validate(
        {
            "memory_ref": page.memory_ref.model_dump(),
            "mode": page.mode,
            "hits": hits,
            "rerank_status": page.rerank_status if report_status else None,
        }
    )


@pytest.mark.parametrize("report_status", [False, True])
def test_search_response_equals_the_validated_answer(report_status: bool) -> None:
    page = _page()
    built = search_response(page, report_status=report_status)
    expected = _validated(page, report_status)
    assert built.model_dump_json() == expected.model_dump_json()
    assert built == expected
    # And it is itself a valid answer: validating its wire form gives it back.
    assert SearchResponse.model_validate_json(built.model_dump_json()) == built


def test_an_empty_scope_answers_a_null_revision() -> None:
    page = MemorySearchPage(memory_ref=None, mode="fts", hits=())
    assert search_response(page).model_dump(mode="json") == {
        "memory_ref": None,
        "mode": "fts",
        "hits": [],
    }
