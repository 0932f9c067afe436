"""Typed errors of the SDK, one per code of the server's error envelope (`ERRORS` names them).

Each error the server names also subclasses the runtime's own exception (an
`ApiNotFoundError` is a `NotFoundError`), so code written against the embedded runtime
catches the same classes over HTTP. Every one is an `ApiError` carrying the HTTP status, the
code, the details and the request id to quote in a bug report.
"""

from __future__ import annotations

from typing import Any

import httpx

from powercontext.memory import errors as domain
from powercontext.memory.error_codes import ERRORS
from powercontext.memory.errors import (
    CapabilityNotSupportedError,
    ErasedError,
    IdempotencyConflictError,
    InferenceTimeoutError,
    InferenceUnavailableError,
    InvalidCursorError,
    InvalidInferenceOutputError,
    MemoryValidationError,
    NotFoundError,
    PayloadTooLargeError,
    PowerContextError,
    RevisionConflictError,
    StorageError,
)


class ApiError(PowerContextError):
    """The server answered with an error envelope."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        code: str,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> None:
        # Not cooperative on purpose: the domain bases take other constructor arguments.
        Exception.__init__(self, message)
        self.message = message
        self.status_code = status_code
        self.code = code
        self.details = details or {}
        self.request_id = request_id

    def __str__(self) -> str:
        suffix = f" (request id {self.request_id})" if self.request_id else ""
        return f"{self.status_code} {self.code}: {self.message}{suffix}"


class ConnectionFailedError(PowerContextError):
    """The server could not be reached, or did not answer within the timeout."""

    code = "connection_failed"


def connection_failed(exc: httpx.TransportError) -> ConnectionFailedError:
    """What failed, where, and what to check: the bare exception type alone left a new user
    guessing at which address was tried."""
    try:
        url = exc.request.url
        where = f" at {url.scheme}://{url.netloc.decode('ascii', 'replace')}"
    except RuntimeError:  # an error raised before a request was attached
        where = ""
    if isinstance(exc, httpx.TimeoutException):
        what = f"no answer within the timeout ({type(exc).__name__})"
        hint = "raise POWERCONTEXT_CLIENT_TIMEOUT for large calls, or check the server's load"
    else:
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        hint = (
            "is `powercontext server run` running there? Set the address with "
            "POWERCONTEXT_CLIENT_SERVER_URL (the CLI: --server-url), or use the CLI's --local"
        )
    return ConnectionFailedError(f"cannot reach the PowerContext server{where}: {what}; {hint}")


class UnauthorizedError(ApiError, domain.UnauthorizedError):
    """401: the API key is missing or unknown."""


class ForbiddenError(ApiError, domain.ForbiddenError):
    """403: the API key may not use this scope."""


class ServerError(ApiError):
    """500 or an unexpected answer: a server bug; quote `request_id`."""


class ApiValidationError(ApiError, MemoryValidationError):
    pass


class ApiInvalidCursorError(ApiValidationError, InvalidCursorError):
    pass


class ApiCapabilityNotSupportedError(ApiError, CapabilityNotSupportedError):
    pass


class ApiNotFoundError(ApiError, NotFoundError):
    pass


class ApiPayloadTooLargeError(ApiError, PayloadTooLargeError):
    pass


class ApiErasedError(ApiError, ErasedError):
    """410: the entry or version was erased; the tombstone's ids travel in `details`."""

    def __init__(self, message: str, **info: Any) -> None:
        super().__init__(message, **info)
        self.entry_id: str = str(self.details.get("entry_id", ""))
        self.entry_version_id: str | None = self.details.get("entry_version_id")
        self.erased_revision: int = int(self.details.get("erased_revision") or 0)


class ApiRevisionConflictError(ApiError, RevisionConflictError):
    def __init__(self, message: str, **info: Any) -> None:
        super().__init__(message, **info)
        self.expected: int | None = self.details.get("expected_revision")
        self.actual: int | None = self.details.get("actual_revision")


class ApiIdempotencyConflictError(ApiError, IdempotencyConflictError):
    pass


class ApiInferenceTimeoutError(ApiError, InferenceTimeoutError):
    pass


class ApiInferenceUnavailableError(ApiError, InferenceUnavailableError):
    pass


class ApiInvalidInferenceOutputError(ApiError, InvalidInferenceOutputError):
    pass


class ApiStorageError(ApiError, StorageError):
    pass


_CLASSES: dict[str, type[ApiError]] = {
    cls.__name__: cls
    for cls in (
        UnauthorizedError,
        ForbiddenError,
        ServerError,
        ApiValidationError,
        ApiInvalidCursorError,
        ApiCapabilityNotSupportedError,
        ApiNotFoundError,
        ApiPayloadTooLargeError,
        ApiErasedError,
        ApiRevisionConflictError,
        ApiIdempotencyConflictError,
        ApiInferenceTimeoutError,
        ApiInferenceUnavailableError,
        ApiInvalidInferenceOutputError,
        ApiStorageError,
    )
}
_BY_CODE: dict[str, type[ApiError]] = {spec.code: _CLASSES[spec.sdk] for spec in ERRORS}
_FOREIGN_STATUS: dict[int, tuple[str, type[ApiError]]] = {
    401: ("unauthorized", UnauthorizedError),
    403: ("forbidden", ForbiddenError),
    413: ("payload_too_large", ApiPayloadTooLargeError),
}


def error_from_response(
    status_code: int, payload: Any, request_id: str | None, *, content_type: str | None = None
) -> ApiError:
    """The typed error of an error response; a body that is not our envelope is a ServerError,
    or for 401, 403 and 413 their class, since a proxy in front often answers those itself."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        code, cls = _FOREIGN_STATUS.get(status_code, ("internal_error", ServerError))
        # A proxy's HTML page said only "unexpected HTTP 502": name what answered instead.
        media = content_type.split(";")[0].strip() if content_type else "no content type"
        return cls(
            f"HTTP {status_code} ({media}) without a PowerContext error envelope; is a proxy "
            "or another service answering at this server URL?",
            status_code=status_code,
            code=code,
            request_id=request_id,
        )
    code = error["code"]
    details = error.get("details")
    cls = _BY_CODE.get(code, ServerError)
    return cls(
        str(error.get("message") or code),
        status_code=status_code,
        code=code,
        details=details if isinstance(details, dict) else {},
        request_id=request_id,
    )


def error_from_http(response: httpx.Response) -> ApiError:
    """`error_from_response` of a received response, whatever its body."""
    try:
        payload: Any = response.json()
    except ValueError:
        payload = None
    return error_from_response(
        response.status_code,
        payload,
        response.headers.get("x-request-id"),
        content_type=response.headers.get("content-type"),
    )


def unexpected_answer(response: httpx.Response, why: str) -> ServerError:
    """A success whose body is not what the route answers (not JSON, or another shape): a
    proxy, another service, or a server of another version; never a raw parser error."""
    request = response.request
    why = why.splitlines()[0] if why else why  # pydantic's errors run over many lines
    return ServerError(
        f"the answer to {request.method} {request.url.path} is not what this SDK expects "
        f"({why}); is the server a PowerContext of the same version, without a proxy "
        "rewriting answers?",
        status_code=response.status_code,
        code="internal_error",
        request_id=response.headers.get("x-request-id"),
    )


def names_no_route(error: ApiError) -> bool:
    """A 404 for the URL itself (a wrong path prefix in the server URL, an older server), not
    for what the request named. The server's envelope tells them apart only by its message."""
    return error.code == "not_found" and error.message.startswith("no route ")
