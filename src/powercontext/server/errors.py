"""The one place that turns exceptions into the HTTP error envelope.

A response carries a status, a stable `code`, a message written by PowerContext and small
structured `details`. It never carries a stack trace, SQL, a provider's body or request input:
messages of storage and inference failures are replaced by fixed text (the original goes to
the server log, tagged with the request id).
"""

from __future__ import annotations

import logging
import re
import sys
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from powercontext.memory.error_codes import BY_CODE, ERRORS, spec_of
from powercontext.memory.errors import (
    ErasedError,
    ForbiddenError,
    PowerContextError,
    RevisionConflictError,
    StorageError,
    UnauthorizedError,
)
from powercontext.server.schemas import error_location

__all__ = ["ForbiddenError", "UnauthorizedError", "describe", "envelope", "error_response"]

log = logging.getLogger("powercontext.http")

MAX_MESSAGE_CHARS = 1000
MAX_VALIDATION_ERRORS = 20

_STORAGE_CAUSES = (
    ("SQLITE_FULL", "the storage is full"),
    ("SQLITE_READONLY", "the storage is read-only"),
    ("SQLITE_BUSY", "the storage is busy"),
    ("SQLITE_LOCKED", "the storage is busy"),
)
# PostgreSQL's conditions (storage.postgres.errors names them). A connection lost during the
# server's COMMIT leaves the write's fate unknown, so these answers do not claim either way.
_POSTGRES_CAUSES = (
    ("disk is full", "the database server's disk is full"),
    ("is read-only", "the database is read-only"),
    ("lock was not granted", "the database is busy (lock timeout)"),
    ("statement was cancelled", "the database cancelled the statement (statement timeout)"),
    ("rolled the transaction back", "the database rolled the transaction back"),
    ("no free connection slots", "the database server has no free connection"),
    ("no pooled connection", "no database connection is free"),
    ("connection to the database server was lost", "the database connection was lost"),
    ("closed the connection", "the database connection was lost"),
    ("no PostgreSQL server answers", "the database server is unreachable"),
    ("starting up or shutting down", "the database server is restarting"),
)
_POSTGRES = "PostgreSQL storage failed"

# Codes of framework-level HTTP errors (unknown route, wrong method, unreadable body).
_HTTP_STATUS_CODES = {spec.status: spec.code for spec in ERRORS if spec.framework_status}


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "error": {"code": code, "message": message[:MAX_MESSAGE_CHARS], "details": details or {}}
    }


def error_response(
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(envelope(code, message, details), status_code=status, headers=headers)


def _storage_message(exc: StorageError) -> str:
    """A safe summary: the full text (which names files, URLs and server lines) is logged."""
    text = str(exc)
    if text.startswith(_POSTGRES):
        for marker, cause in _POSTGRES_CAUSES:
            if marker in text:
                return f"{cause}; retry (the server's log has the details)"
        return "the database failed; retry (the server's log has the details)"
    for marker, cause in _STORAGE_CAUSES:
        if marker in text:
            return f"{cause}; the write was not applied"
    return "the storage backend failed; the write was not applied"


def describe(exc: PowerContextError) -> tuple[int, str, str, dict[str, Any]]:
    """(status, code, safe message, details) of a domain error."""
    spec = spec_of(exc)
    details: dict[str, Any] = {}
    if isinstance(exc, RevisionConflictError):
        details = {"expected_revision": exc.expected, "actual_revision": exc.actual}
    elif isinstance(exc, ErasedError):
        details = {
            "entry_id": exc.entry_id,
            "entry_version_id": exc.entry_version_id,
            "erased_revision": exc.erased_revision,
        }
    if isinstance(exc, StorageError):
        message = _storage_message(exc)
    else:
        message = spec.fixed_message or str(exc) or spec.code
    if spec.code == "validation_error":
        details = {"errors": [_runtime_validation_error(message)]}
    return spec.status, spec.code, message, details


_PATH = re.compile(r"([A-Za-z_][\w]*(?:\.\w+)*): (.+)", re.DOTALL)


def _runtime_validation_error(message: str) -> dict[str, Any]:
    """The one error of a runtime validation failure in the shape of a body's field errors
    (`loc`, `msg`, `type`), which the contract lists for every validation_error: the field
    path its message starts with (`searches.2.query: ...`), else no location."""
    if found := _PATH.fullmatch(message):
        return {"loc": found.group(1).split("."), "msg": found.group(2), "type": "value_error"}
    return {"loc": [], "msg": message, "type": "value_error"}


def _request_id(request: Request) -> str | None:
    value = getattr(request.state, "request_id", None)
    return value if isinstance(value, str) else None


async def _domain_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PowerContextError)
    status, code, message, details = describe(exc)
    # The app's state is read by name: server.state imports this module (through auth).
    state = getattr(request.app.state, "powercontext", None)
    if state is not None:
        state.metrics.observe_failure(code)
    if status >= 500:
        # A storage message names the SQLite condition and helps the operator; an inference
        # message may quote the provider's answer (and so memory text), so only its type.
        cause = str(exc)[:MAX_MESSAGE_CHARS] if isinstance(exc, StorageError) else ""
        log.warning(
            "request failed: %s (%s) %s",
            code,
            type(exc).__name__,
            cause,
            extra={"request_id": _request_id(request), "code": code},
        )
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return error_response(status, code, message, details, headers)


def _message_of(error: Any) -> str:
    if error.get("type") == "json_invalid":
        # FastAPI's "JSON decode error" says neither why nor where; the parser's reason
        # (e.g. "Expecting ',' delimiter") quotes no input, so it is safe to pass on.
        reason = (error.get("ctx") or {}).get("error")
        return f"invalid JSON: {reason}" if isinstance(reason, str) else "invalid JSON"
    return str(error.get("msg", ""))


def _validation_details(exc: RequestValidationError | ValidationError) -> dict[str, Any]:
    # Only where and why: `input` and `ctx` may echo memory text back.
    errors = [
        {"loc": error_location(error.get("loc", ())), "msg": _message_of(error)}
        | {"type": str(error.get("type", ""))}
        for error in exc.errors()[:MAX_VALIDATION_ERRORS]
    ]
    return {"errors": errors}


def _where(first: dict[str, Any]) -> str:
    loc = first["loc"]
    if first.get("type") == "json_invalid" and len(loc) == 2 and loc[1].isdigit():
        return f"body (character {loc[1]})"  # the location of a JSON error is an offset
    return ".".join(part for part in loc if part != "body") or "body"


async def _request_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError | ValidationError)
    details = _validation_details(exc)
    first = details["errors"][0] if details["errors"] else {"loc": [], "msg": "invalid request"}
    where = _where(first)
    message = f"{where}: {first['msg']}"
    if where == "body" and first.get("type") in _NOT_AN_OBJECT:
        message = _not_an_object(request.headers.get("content-type"))
    validation = BY_CODE["validation_error"]
    return error_response(validation.status, validation.code, message, details)


_NOT_AN_OBJECT = frozenset({"model_attributes_type", "model_type", "dict_type"})


def _not_an_object(content_type: str | None) -> str:
    # FastAPI reads a body sent without a JSON media type as bytes, so curl's default
    # form type showed up as "not a valid dictionary": name the header instead.
    media_type = (content_type or "").split(";")[0].strip().lower()
    if media_type == "application/json":
        return "body: must be a JSON object"
    sent = f"Content-Type: {media_type}" if media_type else "no Content-Type"
    return f"body: must be a JSON object sent with Content-Type: application/json (got {sent})"


def _unparsable_body(cause: BaseException | None) -> str:
    """Why FastAPI could not parse a body (it raises its 400 from the parser's exception)."""
    if isinstance(cause, UnicodeDecodeError):
        return f"body: not valid UTF-8 (byte {cause.start} cannot be decoded)"
    if isinstance(cause, RecursionError):
        return "body: the JSON is nested too deeply to parse (arrays or objects in one another)"
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        return f"body: a JSON number has more than {sys.get_int_max_str_digits()} digits"
    return "body: not valid UTF-8 JSON"


def _http_message(request: Request, exc: StarletteHTTPException) -> str | None:
    """What a framework refusal with its default text ("Not Found") should have said."""
    if exc.status_code not in (404, 405) or exc.detail != HTTPStatus(exc.status_code).phrase:
        return None
    method, path = request.method, request.url.path
    if exc.status_code == 404:
        return f"no route {method} {path}; the routes are listed at /openapi.json"
    allowed = (exc.headers or {}).get("Allow")
    use = f"; use {allowed}" if allowed else ""
    return f"{method} is not allowed on {path}{use}"


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    if status == 400:
        # FastAPI's answer to a body it cannot decode (e.g. invalid UTF-8): to a client this is
        # one more invalid body, so it gets the same status and code as invalid JSON.
        return error_response(422, "validation_error", _unparsable_body(exc.__cause__))
    code = _HTTP_STATUS_CODES.get(status, "internal_error" if status >= 500 else "bad_request")
    message = _http_message(request, exc) or (exc.detail if isinstance(exc.detail, str) else code)
    return error_response(status, code, message, headers=dict(exc.headers or {}) or None)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(PowerContextError, _domain_error)
    app.add_exception_handler(RequestValidationError, _request_validation_error)
    app.add_exception_handler(ValidationError, _request_validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
