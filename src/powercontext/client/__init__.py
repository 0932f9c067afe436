"""The PowerContext SDK: the runtime's Memory API over HTTP v1 (httpx).

from powercontext.client import SyncPowerContextClient
from powercontext.memory import SearchMemoryRequest

with SyncPowerContextClient("http://127.0.0.1:8000") as client:
    page = client.memory.for_scope("project").search(SearchMemoryRequest(query="deploy"))
"""

from powercontext.client.client import PowerContextClient, SyncPowerContextClient
from powercontext.client.errors import (
    ApiCapabilityNotSupportedError,
    ApiErasedError,
    ApiError,
    ApiIdempotencyConflictError,
    ApiInferenceTimeoutError,
    ApiInferenceUnavailableError,
    ApiInvalidCursorError,
    ApiInvalidInferenceOutputError,
    ApiNotFoundError,
    ApiPayloadTooLargeError,
    ApiRevisionConflictError,
    ApiStorageError,
    ApiValidationError,
    ConnectionFailedError,
    ForbiddenError,
    ServerError,
    UnauthorizedError,
)
from powercontext.client.memory import (
    AsyncMemoryClient,
    AsyncScopedMemoryClient,
    SyncMemoryClient,
    SyncScopedMemoryClient,
)
from powercontext.client.settings import ClientSettings
from powercontext.client.wire import HealthStatus, ReadinessCheck, ReadinessReport

__all__ = [
    "ApiCapabilityNotSupportedError",
    "ApiErasedError",
    "ApiError",
    "ApiIdempotencyConflictError",
    "ApiInferenceTimeoutError",
    "ApiInferenceUnavailableError",
    "ApiInvalidCursorError",
    "ApiInvalidInferenceOutputError",
    "ApiNotFoundError",
    "ApiPayloadTooLargeError",
    "ApiRevisionConflictError",
    "ApiStorageError",
    "ApiValidationError",
    "AsyncMemoryClient",
    "AsyncScopedMemoryClient",
    "ClientSettings",
    "ConnectionFailedError",
    "ForbiddenError",
    "HealthStatus",
    "PowerContextClient",
    "ReadinessCheck",
    "ReadinessReport",
    "ServerError",
    "SyncMemoryClient",
    "SyncPowerContextClient",
    "SyncScopedMemoryClient",
    "UnauthorizedError",
]
