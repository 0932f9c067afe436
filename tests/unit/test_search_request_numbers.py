"""An in-process search reads its numbers as the wire does: a boolean or a string is no limit,
revision or floor (lax pydantic once read `limit=True` as 1 and `min_score="2"` as 2.0)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from powercontext.memory.models import SearchMemoryRequest
from powercontext.server.search_schemas import SearchRequest

REFUSED: list[tuple[str, Any]] = [
    ("limit", True),
    ("limit", False),
    ("limit", "5"),
    ("revision", True),
    ("revision", "3"),
    ("min_score", True),
    ("min_score", "2.0"),
    ("min_similarity", False),
    ("min_similarity", "0.5"),
]
ACCEPTED: list[tuple[str, Any]] = [
    ("limit", 5),
    ("limit", 5.0),
    ("revision", 3),
    ("revision", None),
    ("min_score", 2),
    ("min_score", 2.5),
    ("min_similarity", 0),
    ("min_similarity", -0.5),
]


def _wire_accepts(field: str, value: Any) -> bool:
    try:
        SearchRequest.model_validate({"scope_id": "s", "query": "q", field: value})
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(("field", "value"), REFUSED)
def test_a_boolean_or_a_string_is_refused_naming_the_field(field: str, value: Any) -> None:
    assert not _wire_accepts(field, value)
    with pytest.raises(ValidationError) as raised:
        SearchMemoryRequest.model_validate({"query": "q", field: value})
    (error,) = raised.value.errors()
    assert error["loc"] == (field,)
    assert type(value).__name__ in error["msg"]


@pytest.mark.parametrize(("field", "value"), ACCEPTED)
def test_numbers_are_read_as_over_the_wire(field: str, value: Any) -> None:
    assert _wire_accepts(field, value)
    request = SearchMemoryRequest.model_validate({"query": "q", field: value})
    assert getattr(request, field) == value
