"""HttpConfig and UiConfig (POWERCONTEXT_SERVER_HTTP_*, _UI_*): how the server listens,
whom it admits, and what it will read."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field, SecretStr, field_validator

from powercontext.config.environment import SettingsGroup

BODY_READ_TIMEOUT_SECONDS = 30.0


class HttpConfig(SettingsGroup):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    auth_enabled: bool | None = None
    """None: on when API keys are configured."""
    api_keys: SecretStr | None = None
    """JSON object: {"<key>": ["scope-a", "scope-b"] or ["*"]}."""
    api_keys_file: Path | None = None
    allow_unauthenticated_public_bind: bool = False
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Body limit of every buffered route. No valid body other than remember's grows with the
    caller's data (queries, ids and cursors have their own limits; the largest default batch
    search is about 0.5 MiB), and a larger body would only stall the event loop while it is
    parsed. Raise it with RUNTIME_MAX_BATCH_QUERIES. Streamed imports are not subject to it."""
    max_write_body_bytes: int = Field(default=1024 * 1024, ge=64 * 1024)
    """Body limit of remember (one or a batch) and /mcp: parsing JSON holds the GIL and stalls
    every other request, so a larger batch goes to /v1/memory/remember/stream instead (the SDK
    sends it there), which parses a line at a time."""
    body_read_timeout_seconds: float = Field(
        default=BODY_READ_TIMEOUT_SECONDS, gt=0, le=3600, allow_inf_nan=False
    )
    """How long a buffered route waits for the whole body once the headers are in (408
    beyond, and the connection is closed). uvicorn bounds idle keep-alive connections only:
    without it a client that stops sending mid-body holds its request and buffer for good;
    `inf` would restore that, so it is bounded like the runtime's timeouts."""
    max_remember_stream_bytes: int = Field(default=32 * 1024 * 1024, ge=64 * 1024)
    """Body limit of /v1/memory/remember/stream: the whole batch is held until its one commit,
    parsed (several times its JSON bytes), so this bounds what one call can take; two such
    calls run at once per process (server/state.py). 10,000 entries of 3 KiB fit."""

    @field_validator("api_keys")
    @classmethod
    def _keys_are_json(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            try:
                parsed = json.loads(value.get_secret_value())
            except json.JSONDecodeError as exc:
                # Where it broke, never the text around it: the value is the keys.
                raise ValueError(
                    f"not valid JSON ({exc.msg} at character {exc.pos}); "
                    'write a JSON object like {"key": ["scope"]}'
                ) from None
            if not isinstance(parsed, dict):
                raise ValueError('must be a JSON object like {"key": ["scope"]}')
        return value


class UiConfig(SettingsGroup):
    enabled: bool = False
    """Serve the memory inspector page at /ui and its JSON routes under /ui/api."""
