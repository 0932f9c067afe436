"""The one table of error codes: HTTP envelope, MCP tool errors and the SDK all derive from it.

Each row names the stable `code` a client sees, the HTTP status it travels with, the domain
exception it stands for (the first matching row wins, so subclasses come first), the SDK class
that a client raises for it and, for failures whose own text may quote a provider, the fixed
message that replaces it. An MCP tool error is text starting with `<code>: `.

Rows without a domain exception are refusals of the HTTP framework itself (unknown route,
wrong method, unreadable body). `ConfigurationError` has no row: it stops a process from
starting and never reaches a client (were one raised while serving, it would be an
`internal_error`).
"""

from __future__ import annotations

from dataclasses import dataclass

from powercontext.memory.errors import (
    CapabilityNotSupportedError,
    ErasedError,
    ForbiddenError,
    IdempotencyConflictError,
    InferenceError,
    InferenceTimeoutError,
    InvalidCursorError,
    InvalidInferenceOutputError,
    MemoryValidationError,
    NotFoundError,
    PayloadTooLargeError,
    PowerContextError,
    RevisionConflictError,
    StorageError,
    UnauthorizedError,
)


@dataclass(frozen=True)
class ErrorSpec:
    code: str
    status: int
    domain: type[PowerContextError] | None
    sdk: str
    """The name of the class `powercontext.client` raises for this code."""
    fixed_message: str | None = None
    framework_status: bool = False
    """True when the HTTP framework's own refusal with `status` carries this code."""

    @property
    def mcp_prefix(self) -> str:
        return f"{self.code}: "


ERRORS: tuple[ErrorSpec, ...] = (
    ErrorSpec("unauthorized", 401, UnauthorizedError, "UnauthorizedError", framework_status=True),
    ErrorSpec("forbidden", 403, ForbiddenError, "ForbiddenError", framework_status=True),
    ErrorSpec(
        "capability_not_supported",
        422,
        CapabilityNotSupportedError,
        "ApiCapabilityNotSupportedError",
    ),
    ErrorSpec("invalid_cursor", 422, InvalidCursorError, "ApiInvalidCursorError"),
    ErrorSpec("validation_error", 422, MemoryValidationError, "ApiValidationError"),
    ErrorSpec("revision_conflict", 409, RevisionConflictError, "ApiRevisionConflictError"),
    ErrorSpec("idempotency_conflict", 409, IdempotencyConflictError, "ApiIdempotencyConflictError"),
    ErrorSpec("not_found", 404, NotFoundError, "ApiNotFoundError", framework_status=True),
    # A forgotten entry: its tombstone answers, never its text.
    ErrorSpec("erased", 410, ErasedError, "ApiErasedError"),
    ErrorSpec(
        "payload_too_large",
        413,
        PayloadTooLargeError,
        "ApiPayloadTooLargeError",
        framework_status=True,
    ),
    ErrorSpec(
        "inference_timeout",
        504,
        InferenceTimeoutError,
        "ApiInferenceTimeoutError",
        "the reranking model did not answer within the generation timeout",
    ),
    ErrorSpec(
        "inference_invalid_output",
        502,
        InvalidInferenceOutputError,
        "ApiInvalidInferenceOutputError",
        "the reranking model returned invalid output",
    ),
    # The base class too: an inference failure of no finer kind is an unavailable provider.
    ErrorSpec(
        "inference_unavailable",
        503,
        InferenceError,
        "ApiInferenceUnavailableError",
        "the inference provider is unavailable; retry later",
    ),
    # Its message names the storage condition (full, read-only, busy): the server builds it.
    ErrorSpec("storage_unavailable", 503, StorageError, "ApiStorageError"),
    ErrorSpec("method_not_allowed", 405, None, "ServerError", framework_status=True),
    # Any other 4xx the framework refuses with; its status is the framework's.
    ErrorSpec("bad_request", 400, None, "ApiValidationError"),
    # Last: every other PowerContextError, and any exception we did not raise on purpose.
    ErrorSpec("internal_error", 500, PowerContextError, "ServerError", "internal server error"),
)

BY_CODE: dict[str, ErrorSpec] = {spec.code: spec for spec in ERRORS}
INTERNAL_ERROR = BY_CODE["internal_error"]


def spec_of(exc: PowerContextError) -> ErrorSpec:
    """The row of a domain error: the first whose exception class it is an instance of."""
    return next(
        (spec for spec in ERRORS if spec.domain is not None and isinstance(exc, spec.domain)),
        INTERNAL_ERROR,
    )
