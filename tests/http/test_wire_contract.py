"""The OpenAPI says exactly what the server accepts, and both backends answer alike
(issue 19, item 8).

Each case is a body the red team found accepted by the schema but refused by the server (or
the reverse), or answered differently by SQLite and PostgreSQL: blank strings, NUL characters,
booleans where integers belong, integers beyond what a revision can be. For every case the
committed OpenAPI document and the live server agree, on both backends.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml

from tests.http.live import backend_server

CONTRACT = Path(__file__).resolve().parents[2] / "openapi" / "powercontext.yaml"
CITATION = {
    "memory_ref": {"scope_id": "c", "revision": 1},
    "entry_id": "e",
    "entry_version_id": "v",
}
BIG = 2**63  # one past the largest signed 64-bit integer

# (route, body, accepted): `accepted` is what both the schema and the server must say.
CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("head", {"scope_id": "c"}, True),
    ("head", {"scope_id": "   "}, False),
    ("head", {"scope_id": "a\x00b"}, False),
    ("head", {"scope_id": "\x1c"}, False),  # whitespace to Python, not to ECMAScript's \s
    ("remember", {"scope_id": "c", "text": " \t\n"}, False),
    ("remember", {"scope_id": "c", "text": "a\x00b"}, False),
    ("remember", {"scope_id": "c", "text": "ok", "kind": "  "}, False),
    ("remember", {"scope_id": "c", "text": "ok", "reason": "why\x00"}, False),
    ("remember", {"scope_id": "c", "text": "ok", "expected_revision": True}, False),
    ("remember", {"scope_id": "c", "text": "ok", "expected_revision": BIG}, False),
    ("search", {"scope_id": "c", "query": "   "}, False),
    ("search", {"scope_id": "c", "query": "q\x00"}, False),
    ("search", {"scope_id": "c", "query": "q", "limit": True}, False),
    ("search", {"scope_id": "c", "query": "q", "min_similarity": True}, False),
    ("search", {"scope_id": "c", "query": "q", "min_score": "1.5"}, False),
    ("search", {"scope_id": "c", "query": "q", "min_score": 2, "min_similarity": 0}, True),
    ("search/batch", {"scope_id": "c", "searches": [{"query": "q", "limit": 3}]}, True),
    ("search/batch", {"scope_id": "c", "searches": [{"query": "q", "limit": True}]}, False),
    ("search/batch", {"scope_id": "c", "searches": [{"query": "q", "limit": "3"}]}, False),
    ("search/batch", {"scope_id": "c", "searches": [{"query": "q", "min_score": False}]}, False),
    ("changes", {"scope_id": "c", "since_revision": False}, False),
    # JSON has one number type: 1.0 is an integer to JSON Schema, 1.5 and "1" are not.
    ("changes", {"scope_id": "c", "since_revision": 1.0, "limit": 5.0}, True),
    ("changes", {"scope_id": "c", "since_revision": 1.5}, False),
    ("changes", {"scope_id": "c", "since_revision": "1"}, False),
    ("search", {"scope_id": "c", "query": "q", "limit": 5.0, "revision": 1.0}, True),
    ("remember", {"scope_id": "c", "text": "ok", "expected_revision": 0.5}, False),
    ("changes", {"scope_id": "c", "since_revision": BIG}, False),
    ("changes", {"scope_id": "c", "since_revision": BIG - 1}, True),
    ("changes", {"scope_id": "c", "since_revision": 2**64 + 5}, False),
    ("entries/list", {"scope_id": "c", "revision": BIG}, False),
    ("entries/list", {"scope_id": "c", "limit": False}, False),
    ("entries/list", {"scope_id": "c", "filter": {"metadata": {"p": {"gt": True}}}}, False),
    ("entries/list", {"scope_id": "c", "filter": {"metadata": {"p": {"gte": 2.5}}}}, True),
    ("entries/list", {"scope_id": "c", "filter": {"metadata": {"p": {"exists": "yes"}}}}, False),
    ("entries/list", {"scope_id": "c", "filter": {"metadata": {"p": {"exists": 1}}}}, False),
    (
        "search",
        {"scope_id": "c", "query": "q", "filter": {"metadata": {"p": {"lt": False}}}},
        False,
    ),
    ("entries/get", {"scope_id": "c", "citation": CITATION}, True),  # 404: named nothing
    (
        "entries/get",
        {"scope_id": "c", "citation": {**CITATION, "entry_id": "e\x00"}},
        False,
    ),
    (
        "entries/get",
        {
            "scope_id": "c",
            "citation": {**CITATION, "memory_ref": {"scope_id": "c", "revision": BIG}},
        },
        False,
    ),
]


def _request_schema(route: str) -> dict[str, Any]:
    document = yaml.safe_load(CONTRACT.read_text(encoding="utf-8"))
    operation = document["paths"][f"/v1/memory/{route}"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return {**schema, "components": document["components"]}


def _schema_accepts(route: str, body: dict[str, Any]) -> bool:
    validator = jsonschema.Draft202012Validator(_request_schema(route))
    return validator.is_valid(body)


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def backend_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with backend_server(request.param, tmp_path_factory.mktemp(f"wire-{request.param}")) as server:
        yield server.url


@pytest.mark.parametrize(("route", "body", "accepted"), CASES)
def test_schema_and_server_agree(
    backend_url: str, route: str, body: dict[str, Any], accepted: bool
) -> None:
    assert _schema_accepts(route, body) is accepted, "the OpenAPI document disagrees"
    with httpx.Client(base_url=backend_url, timeout=30) as client:
        response = client.post(f"/v1/memory/{route}", json=body)
    if accepted:
        assert response.status_code in (200, 404), response.text
    else:
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "validation_error", response.text
