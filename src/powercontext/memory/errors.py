"""Domain errors. Each `code` is the one of `error_codes.ERRORS`, which transports map from."""

from __future__ import annotations


class PowerContextError(Exception):
    """Base class of every error PowerContext raises on purpose."""

    code = "internal_error"


class ConfigurationError(PowerContextError):
    """The configuration is invalid; the message names the environment variable."""

    code = "configuration_error"


def failure_summary(exc: BaseException) -> str:
    """What a log line or a status may show of a failure: a ConfigurationError's own message
    (ours, naming the setting or file to fix, as the CLI prints it), else the type only (a
    provider's message can carry a URL or a key)."""
    if isinstance(exc, ConfigurationError):
        return f"{type(exc).__name__}: {exc}"
    return type(exc).__name__


class MemoryValidationError(PowerContextError, ValueError):
    """A request is well-formed JSON but violates a bound or rule."""

    code = "validation_error"


class InvalidCursorError(MemoryValidationError):
    """A list cursor that is malformed, or of another scope or revision."""

    code = "invalid_cursor"


class NotFoundError(PowerContextError):
    """The cited scope, entry or entry version does not exist (or is not active)."""

    code = "not_found"


class RevisionConflictError(PowerContextError):
    """A compare-and-swap on the scope head (or on an entry's current version) lost."""

    code = "revision_conflict"

    def __init__(self, message: str, *, expected: int | None, actual: int | None) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class CapabilityNotSupportedError(PowerContextError):
    """The requested search mode or feature is not available for this scope or deployment."""

    code = "capability_not_supported"


class PayloadTooLargeError(PowerContextError):
    """A batch or body exceeds a configured bound."""

    code = "payload_too_large"


class UnauthorizedError(PowerContextError):
    """No API key, or one that matches no configured key."""

    code = "unauthorized"


class ForbiddenError(PowerContextError):
    """The key is valid but may not use the scope the request names."""

    code = "forbidden"


class InferenceError(PowerContextError):
    """Base of the fail-closed inference errors (RFC: never converted to coarse results)."""

    code = "inference_unavailable"


class InferenceTimeoutError(InferenceError):
    """The provider did not answer within its deadline."""

    code = "inference_timeout"


class InferenceUnavailableError(InferenceError):
    """The provider could not be reached or answered with an error."""

    code = "inference_unavailable"


class InvalidInferenceOutputError(InferenceError):
    """The provider answered, but with output PowerContext cannot use."""

    code = "inference_invalid_output"


class StorageError(PowerContextError):
    """The storage backend failed (disk full, read-only, unreachable). No partial write."""

    code = "storage_unavailable"


class IdempotencyConflictError(PowerContextError):
    """An idempotency key already recorded in this scope for a write with another body."""

    code = "idempotency_conflict"


class ErasedError(PowerContextError):
    """The cited entry or entry version was erased (`forget`): only its tombstone remains,
    which names the ids and the erasing revision, never the text."""

    code = "erased"

    def __init__(
        self,
        message: str,
        *,
        entry_id: str,
        entry_version_id: str | None = None,
        erased_revision: int,
    ) -> None:
        super().__init__(message)
        self.entry_id = entry_id
        self.entry_version_id = entry_version_id
        self.erased_revision = erased_revision


def citation_not_found(scope_id: str, cited_scope_id: str) -> str:
    """The message of a citation that resolves to nothing in `scope_id`: it names the scope
    asked, and the citation's own scope when the two differ (a citation copied across)."""
    if cited_scope_id != scope_id:
        return f"the citation is of scope {cited_scope_id!r}, not {scope_id!r}"
    return f"the citation names no entry version in scope {scope_id!r}"
