"""A batch search's query and scope are the single search's: the committed OpenAPI refuses
exactly what the server refuses, for one search and for every search of a batch.

The batch item once took the runtime's query type, without the wire's non-blank pattern: the
OpenAPI accepted `"query": "   "` (or a NUL) in a batch, which the server answers 422.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from powercontext.server.search_schemas import BatchSearchRequest, SearchRequest

CONTRACT = Path(__file__).resolve().parents[2] / "openapi" / "powercontext.yaml"

# Blank to Python's str.strip() (so refused by the server), NUL, and two that pass.
QUERIES = [(" \t\n", False), ("\x1c", False), ("\u3000", False), ("q\x00", False)]
QUERIES += [("deploy", True), (" café ", True)]


@cache
def _document() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CONTRACT.read_text(encoding="utf-8"))
    return loaded


def _schema_accepts(route: str, body: dict[str, Any]) -> bool:
    document = _document()
    operation = document["paths"][f"/v1/memory/{route}"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    validator = jsonschema.Draft202012Validator({**schema, "components": document["components"]})
    return validator.is_valid(body)


def _model_accepts(model: type[SearchRequest | BatchSearchRequest], body: dict[str, Any]) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(("query", "accepted"), QUERIES)
def test_a_batch_query_is_refused_like_a_single_query(query: str, accepted: bool) -> None:
    single = {"scope_id": "s", "query": query}
    batch = {"scope_id": "s", "searches": [{"query": "ok"}, {"query": query}]}
    assert _model_accepts(SearchRequest, single) is accepted
    assert _schema_accepts("search", single) is accepted
    assert _model_accepts(BatchSearchRequest, batch) is accepted
    assert _schema_accepts("search/batch", batch) is accepted, "the OpenAPI disagrees"


@pytest.mark.parametrize(("scope_id", "accepted"), [("   ", False), ("a\x00", False), ("p", True)])
def test_a_batch_scope_is_refused_like_a_single_scope(scope_id: str, accepted: bool) -> None:
    batch = {"scope_id": scope_id, "searches": [{"query": "deploy"}]}
    assert _model_accepts(SearchRequest, {"scope_id": scope_id, "query": "q"}) is accepted
    assert _model_accepts(BatchSearchRequest, batch) is accepted
    assert _schema_accepts("search/batch", batch) is accepted, "the OpenAPI disagrees"
