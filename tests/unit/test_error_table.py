"""The server's envelope, the MCP tool errors, the SDK and the docs agree with `ERRORS`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.exceptions import HTTPException

from powercontext import client
from powercontext.client.errors import ApiError, error_from_response
from powercontext.memory import errors as domain
from powercontext.memory.error_codes import BY_CODE, ERRORS, ErrorSpec
from powercontext.memory.errors import ErasedError, PowerContextError, RevisionConflictError
from powercontext.server.errors import describe, envelope, install_error_handlers
from powercontext.server.mcp import tool_error_of
from powercontext.server.schemas import ErrorCode

DOCS = Path(__file__).resolve().parents[2] / "docs" / "http.md"
DOMAIN = [spec for spec in ERRORS if spec.domain is not None]
FRAMEWORK = [spec for spec in ERRORS if spec.framework_status]


def _raised(cls: type[PowerContextError]) -> PowerContextError:
    if cls is RevisionConflictError:
        return RevisionConflictError("stale", expected=1, actual=2)
    if cls is ErasedError:
        return ErasedError("gone", entry_id="e", entry_version_id="v", erased_revision=3)
    return cls("what went wrong")


def test_codes_are_unique_and_the_wire_enum_lists_exactly_them() -> None:
    assert len(BY_CODE) == len(ERRORS)
    assert set(get_args(ErrorCode)) == set(BY_CODE)


@pytest.mark.parametrize("spec", DOMAIN, ids=lambda spec: spec.code)
def test_the_domain_class_carries_the_code_of_its_row(spec: ErrorSpec) -> None:
    assert spec.domain is not None
    assert spec.domain.code == spec.code


@pytest.mark.parametrize("spec", DOMAIN, ids=lambda spec: spec.code)
def test_the_server_and_mcp_map_the_domain_error_to_its_row(spec: ErrorSpec) -> None:
    assert spec.domain is not None
    exc = _raised(spec.domain)
    status, code, message, _ = describe(exc)
    assert (status, code) == (spec.status, spec.code)
    if spec.fixed_message:
        assert message == spec.fixed_message
    result = tool_error_of(exc, "memory_search")
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith(spec.mcp_prefix + message)


def test_every_domain_error_class_has_a_row_or_is_local_only() -> None:
    classes = [
        value
        for value in vars(domain).values()
        if isinstance(value, type) and issubclass(value, PowerContextError)
    ]
    for cls in classes:
        if cls is domain.ConfigurationError:
            continue  # stops a process from starting; never reaches a client
        row = BY_CODE[cls.code]
        assert row.domain is not None and issubclass(cls, row.domain), cls


@pytest.mark.parametrize("spec", FRAMEWORK, ids=lambda spec: spec.code)
def test_the_frameworks_own_refusals_carry_the_code_of_their_row(spec: ErrorSpec) -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/refuse")
    def refuse() -> None:
        raise HTTPException(spec.status)

    with TestClient(app) as http:
        response = http.get("/refuse")
    assert response.status_code == spec.status
    assert response.json()["error"]["code"] == spec.code


@pytest.mark.parametrize("spec", ERRORS, ids=lambda spec: spec.code)
def test_the_sdk_raises_the_class_of_the_row(spec: ErrorSpec) -> None:
    error = error_from_response(spec.status, envelope(spec.code, "m"), "req-1")
    assert type(error).__name__ == spec.sdk
    assert getattr(client, spec.sdk) is type(error)  # public in powercontext.client
    assert isinstance(error, ApiError) and error.code == spec.code
    if spec.domain is not None:
        assert isinstance(error, spec.domain)


def test_the_http_docs_list_every_code_with_its_status() -> None:
    rows = re.findall(r"^\| (\d{3}) \| `(\w+)` \|", DOCS.read_text(encoding="utf-8"), re.M)
    assert {code: int(status) for status, code in rows} == {s.code: s.status for s in ERRORS}
