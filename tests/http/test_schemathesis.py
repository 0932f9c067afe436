"""Schemathesis over the committed contract against a live server: no unexpected 5xx, and
every response conforms to the schema (status, content type, body)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.http.conftest import Served


@schemathesis.serializer("application/x-ndjson")
def _ndjson(context: schemathesis.SerializationContext, value: Any) -> bytes:
    """The import body is JSON lines, each line one documented object: one line sent."""
    return (json.dumps(value) + "\n").encode("utf-8")


CONTRACT = Path(__file__).resolve().parents[2] / "openapi" / "powercontext.yaml"
schema = schemathesis.openapi.from_path(str(CONTRACT))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_contract_holds(case: schemathesis.Case[Any], open_server: Served) -> None:
    case.call_and_validate(base_url=open_server.url, checks=CHECKS, timeout=30)
