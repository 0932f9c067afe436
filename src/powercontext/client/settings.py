"""Client configuration: POWERCONTEXT_CLIENT_SERVER_URL, _API_KEY, _TIMEOUT (and `.env`)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_SERVER_URL = "http://127.0.0.1:8000"


class ClientSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="POWERCONTEXT_CLIENT_", env_file=".env", extra="ignore"
    )

    server_url: str = DEFAULT_SERVER_URL
    api_key: SecretStr | None = None
    timeout: float = Field(default=30.0, gt=0, le=3600)
    """Seconds per HTTP request (connect, read, write and pool)."""
    max_retries: int = Field(default=3, ge=0, le=10)
    """Retries of an idempotent call after a 503 or a connection failure; writes never retry."""
    retry_backoff: float = Field(default=0.2, ge=0, le=30)
    """First retry delay in seconds; doubles per retry, capped at `retry_backoff_max`."""
    retry_backoff_max: float = Field(default=5.0, ge=0, le=120)
