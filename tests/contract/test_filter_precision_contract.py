"""Contract: a metadata range filter compares numbers exactly, on every backend.

PostgreSQL used to compare through float8, so integers beyond 2**53 that SQLite tells apart
compared equal there (`{"gt": 2**53}` missed 2**53 + 1). Values a store cannot compare alike
(integers beyond 64 bits, NUL, lone surrogates) are refused when the filter is built.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.ports import MemoryStore
from powercontext.memory.service import MemoryService

VALUES: list[int | float] = [
    2**53,
    2**53 + 1,
    2**63 - 1,
    -(2**63),
    -(2**63) + 1,
    0.1,
    0.30000000000000004,
]


@pytest.fixture
async def memory(store: MemoryStore) -> MemoryService:
    service = MemoryService(store, embedder=HashingEmbedder(dimension=32))
    entries = [
        RememberMemoryRequest(kind="fact", text=f"number {i}", metadata={"n": value, "i": i})
        for i, value in enumerate(VALUES)
    ]
    await service.for_scope("p").remember_many(entries)
    return service


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"gt": 2**53}, [2**53 + 1, 2**63 - 1]),
        ({"gte": 2**53 + 1, "lt": 2**63 - 1}, [2**53 + 1]),
        ({"gte": 2**63 - 1}, [2**63 - 1]),
        ({"lt": -(2**63) + 1}, [-(2**63)]),
        ({"lte": -(2**63) + 1}, [-(2**63), -(2**63) + 1]),
        ({"gt": 0.1, "lt": 1}, [0.30000000000000004]),
        ({"gte": 0.1, "lte": 0.30000000000000004}, [0.1, 0.30000000000000004]),
        ({"eq": 2**53 + 1}, [2**53 + 1]),
    ],
)
async def test_range_bounds_compare_exactly(
    memory: MemoryService, condition: dict[str, object], expected: list[int | float]
) -> None:
    where = MemoryFilter.model_validate({"metadata": {"n": condition}})
    page = await memory.for_scope("p").list(where=where, limit=100)
    found = sorted(VALUES[int(entry.metadata["i"])] for entry in page.entries)
    assert found == sorted(expected)


@pytest.mark.parametrize(
    "condition",
    [
        {"gt": 2**63},
        {"eq": -(2**63) - 1},
        {"one_of": [1, 2**64]},
        {"eq": "a\x00b"},
        {"lt": "\ud800"},
    ],
)
def test_values_no_store_compares_alike_are_refused(condition: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match=r"64 bits|NUL|surrogates"):
        MemoryFilter.model_validate({"metadata": {"n": condition}})
