"""Contract: the same writes give the same answers on SQLite and PostgreSQL, through the service.

One fixed corpus (Unicode, control characters, long texts, metadata of every JSON type,
threads and event times) is written to both backends with the built-in `hash` embedder, then
revised, retired, reactivated and forgotten. Searches in every mode and at every revision,
list pages walked by cursor and metadata filters must agree: the same hits in the same order
with the same ranks, vector similarities within 1e-6, and BM25 scores within 1e-6 while
nothing is retired (after that, the backends' statistics differ by design: see
test_bm25_parity_contract).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import (
    MemorySearchPage,
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.service import MemoryService

from .test_bm25_parity_contract import stores  # noqa: F401 (the fixture)

pytestmark = pytest.mark.postgres

TEXTS = [
    "Café crème brûlée at the Zürich station",
    "cafe creme brulee recipe from Paris",
    "東京タワーの夜景はきれいです",
    "北京烤鸭 is a famous dish in 北京",
    "I love pizza 🍕 and sushi 🍣 👩‍👩‍👧",
    "tab\there and\rcarriage \x07bell \x1bescape \x1f unit \u2028 separators",
    "Ελληνικά γράμματα και ΣΊΣΥΦΟΣ",
    "straße STRASSE İstanbul ﬁnancial e\u0301cole",
    "the and of to in",
    "C:\\path\\to\\file it's O'Reilly's a:b & c | !d <-> e:*",
    ("long " * 1500) + "needle at the end",
    " ".join(f"word{i}" for i in range(800)),
    "x" * 8000,
]
QUERIES = [
    "café",
    "CAFE creme",
    "東京",
    "北京",
    "pizza 🍕",
    "🍕",
    "bell escape",
    "σίσυφος",
    "strasse istanbul financial école",
    "the and of",
    "?!... ---",
    "o'reilly a:b !d",
    "long needle",
    "word17 word799",
    "x" * 8000,
]
METADATA: list[dict[str, Any]] = [
    {"n": 1},
    {"n": 1.0},
    {"n": "1"},
    {"n": True},
    {"n": False},
    {"n": None},
    {},
    {"n": [1, 2]},
    {"n": {"deep": 1}},
    {"n": 0, "a.b": "dotted"},
    {"n": -0.0},
    {"n": 2**62},
    {"n": 1e-7},
    {"n": "é"},
    {"n": "Z"},
]
CONDITIONS: list[dict[str, Any]] = [
    {"n": {"eq": 1}},
    {"n": {"eq": "1"}},
    {"n": {"eq": True}},
    {"n": {"one_of": [False, 0, "Z"]}},
    {"n": {"exists": True}},
    {"n": {"exists": False}},
    {"n": {"gt": 0}},
    {"n": {"lte": 0}},
    {"n": {"gte": "a"}},
    {"n": {"lt": "a"}},
    {"a.b": {"eq": "dotted"}},
    {"n": {"gt": 0, "lt": 1e-6}},
]
DAY = datetime(2025, 3, 1, tzinfo=UTC)


def _requests() -> list[RememberMemoryRequest]:
    written = [RememberMemoryRequest(text=text, metadata={"t": i}) for i, text in enumerate(TEXTS)]
    for i, metadata in enumerate(METADATA):
        written.append(
            RememberMemoryRequest(
                text=f"kettle note {i} green tea" if i % 2 else f"kettle note {i}",
                metadata={**metadata, "m": i},
                thread=f"thread-{i % 3}",
                occurred_at=DAY + timedelta(hours=i, microseconds=i),
            )
        )
    return written


def _page(page: MemorySearchPage, scores: bool) -> list[tuple[object, ...]]:
    """A page as comparable values: texts, channels, ranks and scores."""
    return [
        (
            hit.text,
            hit.matched_by,
            hit.score,
            [
                (e.channel, e.rank, e.score)
                if scores or e.channel == "vector"
                else (e.channel, e.rank)
                for e in hit.explain
            ],
        )
        for hit in page.hits
    ]


async def _searches(memory: ScopedMemory, revision: int | None, scores: bool) -> list[object]:
    answers: list[object] = []
    for query in QUERIES:
        for mode in ("fts", "vector", "hybrid"):
            for limit in (1, 100):
                request = SearchMemoryRequest(
                    query=query, mode=mode, limit=limit, revision=revision
                )  # type: ignore[arg-type]
                answers.append(_page(await memory.search(request), scores))
    return answers


async def _listings(memory: ScopedMemory, revision: int) -> list[object]:
    answers: list[object] = []
    for limit in (1, 7, 100):
        pages, cursor = [], None
        while True:
            page = await memory.list(revision=revision, cursor=cursor, limit=limit)
            pages.append([entry.text for entry in page.entries])
            if (cursor := page.next_cursor) is None:
                break
        answers.append(pages)
    for condition in CONDITIONS:
        where = MemoryFilter.model_validate({"metadata": condition})
        listed = await memory.list(revision=revision, where=where, limit=100)
        found = await memory.search(
            SearchMemoryRequest(query="kettle note", mode="fts", revision=revision, filter=where)
        )
        answers.append(([e.text for e in listed.entries], [h.text for h in found.hits]))
    window = MemoryFilter(
        threads=("thread-1", "thread-2"),
        occurred_after=DAY + timedelta(hours=2),
        occurred_before=DAY + timedelta(hours=11, microseconds=11),
    )
    answers.append([e.text for e in (await memory.list(revision=revision, where=window)).entries])
    return answers


async def _history(store: MemoryStore) -> list[object]:
    memory = MemoryService(store, embedder=HashingEmbedder()).for_scope("parity")
    written = await memory.remember_many(_requests())
    answers: list[object] = [await _searches(memory, None, scores=True)]
    by_text = {entry.text: entry for entry in written.entries}
    revised = await memory.revise(
        ReviseMemoryRequest(citation=by_text["kettle note 3 green tea"].citation, text="kettle 3")
    )
    await memory.retire(RetireMemoryRequest(citation=revised.entries[0].citation))
    await memory.retire(
        RetireMemoryRequest(citation=by_text["東京タワーの夜景はきれいです"].citation)
    )
    await memory.reactivate(ReactivateMemoryRequest(citation=revised.entries[0].citation))
    await memory.forget(by_text["Café crème brûlée at the Zürich station"].entry_id)
    head = await memory.head()
    assert head is not None and head.revision == 6
    for revision in range(1, head.revision + 1):
        answers.append(await _listings(memory, revision))
        answers.append(await _searches(memory, revision, scores=False))
    return answers


async def test_one_history_gets_the_same_answers_on_both_backends(
    stores: tuple[MemoryStore, MemoryStore],  # noqa: F811
) -> None:
    sqlite, postgres = [await _history(store) for store in stores]
    assert len(sqlite) == len(postgres) == 13
    _assert_alike(sqlite, postgres, "answers")


def _assert_alike(expected: object, actual: object, where: str) -> None:
    """Equal, floats within 1e-6 (SQLite's vectors and BM25 cache hold float32)."""
    if isinstance(expected, float) and isinstance(actual, float):
        assert actual == pytest.approx(expected, rel=1e-6, abs=1e-6), where
    elif isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        assert len(actual) == len(expected), (where, expected, actual)
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _assert_alike(e, a, f"{where}[{i}]")
    else:
        assert actual == expected, where
