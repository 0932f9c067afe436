"""Client configuration: POWERCONTEXT_CLIENT_SERVER_URL, _API_KEY, _TIMEOUT (and `.env`).

An invalid value raises ConfigurationError naming the variable, as ServerSettings does: a
pydantic error said only `timeout: ...`, and a server URL without `http://` failed later as
an unreachable server, after every retry, with a hint to start one.
"""

from __future__ import annotations

import difflib
from typing import Any

import httpx
from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from powercontext.config.environment import FROM_ENV_FILE, set_variables
from powercontext.memory.errors import ConfigurationError

DEFAULT_SERVER_URL = "http://127.0.0.1:8000"
ENV_PREFIX = "POWERCONTEXT_CLIENT_"


def server_base_url(value: str) -> str:
    """`value` as the clients' base URL (no trailing slash); raises ConfigurationError unless
    it is an http(s) URL with a host. Checked where a client is made, on the URL it will use:
    an explicit `server_url` overrides a bad variable rather than failing on it."""
    try:
        url = httpx.URL(value.strip())
    except httpx.InvalidURL as exc:
        raise ConfigurationError(_bad_url(value, str(exc))) from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(_bad_url(value, "it needs http:// or https:// and a host"))
    return str(url).rstrip("/")


def _bad_url(value: str, why: str) -> str:
    return (
        f"invalid server URL {value!r} ({ENV_PREFIX}SERVER_URL, the CLI's --server-url): "
        f"{why}; e.g. {DEFAULT_SERVER_URL}"
    )


class ClientSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=".env", extra="ignore")

    server_url: str = DEFAULT_SERVER_URL
    api_key: SecretStr | None = None
    timeout: float = Field(default=30.0, gt=0, le=3600)
    """Seconds per HTTP request (connect, read, write and pool)."""
    max_retries: int = Field(default=3, ge=0, le=10)
    """Retries of an idempotent call after a 503 or a connection failure: reads, and writes,
    which the SDK always sends with an idempotency key (an import is never retried)."""
    retry_backoff: float = Field(default=0.2, ge=0, le=30)
    """First retry delay in seconds; doubles per retry, capped at `retry_backoff_max`."""
    retry_backoff_max: float = Field(default=5.0, ge=0, le=120)

    def __init__(self, **values: Any) -> None:
        unknown = _unknown_variables()
        try:
            super().__init__(**values)
        except ValidationError as exc:
            problems = unknown + [
                f"{ENV_PREFIX}{'_'.join(str(p) for p in error['loc']).upper()}: {error['msg']}"
                for error in exc.errors()
            ]
            raise ConfigurationError("invalid configuration: " + "; ".join(problems)) from exc
        if unknown:
            raise ConfigurationError("invalid configuration: " + "; ".join(unknown))


def _unknown_variables() -> list[str]:
    """Each POWERCONTEXT_CLIENT_* variable set that names no setting, as the server's settings
    treat theirs: a misspelt `..._TIMEOUT_SECONDS` left the client on its default silently."""
    known = sorted(ENV_PREFIX + name.upper() for name in ClientSettings.model_fields)
    problems = []
    for name, (_, origin) in sorted(set_variables(ENV_PREFIX).items()):
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else f"the client reads {', '.join(known)}"
        where = " (in .env)" if origin == FROM_ENV_FILE else ""
        problems.append(f"{name}{where}: no such setting; {hint}")
    return problems
