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
    description: str
    """What the code tells a client: the OpenAPI error responses and docs/http.md quote it."""
    fixed_message: str | None = None
    framework_status: bool = False
    """True when the HTTP framework's own refusal with `status` carries this code."""

    @property
    def mcp_prefix(self) -> str:
        return f"{self.code}: "


ERRORS: tuple[ErrorSpec, ...] = (
    ErrorSpec(
        "unauthorized",
        401,
        UnauthorizedError,
        "UnauthorizedError",
        "auth is enabled and the bearer key is missing or unknown.",
        framework_status=True,
    ),
    ErrorSpec(
        "forbidden",
        403,
        ForbiddenError,
        "ForbiddenError",
        "the key may not use this scope_id.",
        framework_status=True,
    ),
    ErrorSpec(
        "capability_not_supported",
        422,
        CapabilityNotSupportedError,
        "ApiCapabilityNotSupportedError",
        "the requested search mode is not available in this deployment.",
    ),
    ErrorSpec(
        "invalid_cursor",
        422,
        InvalidCursorError,
        "ApiInvalidCursorError",
        "the cursor is malformed or belongs to another scope or revision.",
    ),
    ErrorSpec(
        "validation_error",
        422,
        MemoryValidationError,
        "ApiValidationError",
        "the body violates a type or bound.",
    ),
    ErrorSpec(
        "revision_conflict",
        409,
        RevisionConflictError,
        "ApiRevisionConflictError",
        "expected_revision is not the head, or the citation names an older version of the entry.",
    ),
    ErrorSpec(
        "idempotency_conflict",
        409,
        IdempotencyConflictError,
        "ApiIdempotencyConflictError",
        "the idempotency_key was used by a write with another body.",
    ),
    ErrorSpec(
        "not_found",
        404,
        NotFoundError,
        "ApiNotFoundError",
        "the cited entry, version or revision does not exist in this scope.",
        framework_status=True,
    ),
    # A forgotten entry: its tombstone answers, never its text.
    ErrorSpec(
        "erased",
        410,
        ErasedError,
        "ApiErasedError",
        "the cited entry or version was erased (forget); `details` names its ids and the "
        "erasing revision, never its content.",
    ),
    ErrorSpec(
        "payload_too_large",
        413,
        PayloadTooLargeError,
        "ApiPayloadTooLargeError",
        "the body exceeds the byte limit, or a batch exceeds the entry limit.",
        framework_status=True,
    ),
    ErrorSpec(
        "inference_timeout",
        504,
        InferenceTimeoutError,
        "ApiInferenceTimeoutError",
        "the reranking model did not answer in time.",
        "the reranking model did not answer within the generation timeout",
    ),
    ErrorSpec(
        "inference_invalid_output",
        502,
        InvalidInferenceOutputError,
        "ApiInvalidInferenceOutputError",
        "the reranking model's output stayed invalid.",
        "the reranking model returned invalid output",
    ),
    # The base class too: an inference failure of no finer kind is an unavailable provider.
    ErrorSpec(
        "inference_unavailable",
        503,
        InferenceError,
        "ApiInferenceUnavailableError",
        "the inference provider is unreachable. Idempotent calls may retry.",
        "the inference provider is unavailable; retry later",
    ),
    # Its message names the storage condition (full, read-only, busy): the server builds it.
    ErrorSpec(
        "storage_unavailable",
        503,
        StorageError,
        "ApiStorageError",
        "the database failed (full, read-only, busy). Idempotent calls may retry.",
    ),
    ErrorSpec(
        "method_not_allowed",
        405,
        None,
        "ServerError",
        "the route exists but not with this HTTP method.",
        framework_status=True,
    ),
    # Any other 4xx the framework refuses with; its status is the framework's.
    ErrorSpec("bad_request", 400, None, "ApiValidationError", "the framework refused the request."),
    # Last: every other PowerContextError, and any exception we did not raise on purpose.
    ErrorSpec(
        "internal_error",
        500,
        PowerContextError,
        "ServerError",
        "an unexpected failure (details are in the server log).",
        "internal server error",
    ),
)

BY_CODE: dict[str, ErrorSpec] = {spec.code: spec for spec in ERRORS}
INTERNAL_ERROR = BY_CODE["internal_error"]


def spec_of(exc: PowerContextError) -> ErrorSpec:
    """The row of a domain error: the first whose exception class it is an instance of."""
    return next(
        (spec for spec in ERRORS if spec.domain is not None and isinstance(exc, spec.domain)),
        INTERNAL_ERROR,
    )


def described(status: int) -> str:
    """The OpenAPI description of an error status: every domain code it may carry."""
    parts = [
        f"{spec.code}: {spec.description.rstrip('.')}"
        for spec in ERRORS
        if spec.status == status and spec.domain is not None
    ]
    return "; ".join(parts) + "."
