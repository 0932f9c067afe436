"""PowerContextClient (async) and SyncPowerContextClient: the SDK's entry points."""

from __future__ import annotations

from typing import Any

import httpx

from powercontext import __version__
from powercontext.client import wire
from powercontext.client.memory import AsyncMemoryClient, SyncMemoryClient
from powercontext.client.settings import ClientSettings, server_base_url
from powercontext.client.transport import AsyncTransport, RetryPolicy, SyncTransport
from powercontext.memory.errors import ConfigurationError


def _http_options(
    settings: ClientSettings,
    server_url: str | None,
    api_key: str | None,
    timeout: float | None,
) -> dict[str, Any]:
    key = _header_key(
        api_key
        if api_key is not None
        else (settings.api_key.get_secret_value() if settings.api_key else None)
    )
    headers = {"User-Agent": f"powercontext-python/{__version__}"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    # httpx takes 0 as "no time at all" (every connect fails) and refuses a negative value
    # with a bare ValueError.
    if timeout is not None and not timeout > 0:
        raise ConfigurationError(f"timeout must be more than 0 seconds, not {timeout!r}")
    return {
        "base_url": server_base_url(server_url or settings.server_url),
        "headers": headers,
        "timeout": timeout if timeout is not None else settings.timeout,
    }


def _header_key(key: str | None) -> str | None:
    """The key as the Authorization header carries it. Whitespace around it (a key file's final
    newline) never reaches a server, which strips a header value, so it is dropped; a character
    no header carries (non-ASCII, a control) is refused here: it failed every request as an
    unreachable server after the retries, or as a bare UnicodeEncodeError."""
    if key is None:
        return None
    key = key.strip()
    if not all(" " <= char <= "~" for char in key):
        raise ConfigurationError(
            "invalid API key (POWERCONTEXT_CLIENT_API_KEY, the CLI's --api-key): it holds a "
            "character an HTTP header cannot carry; a key is printable ASCII"
        )
    return key


def _policy(settings: ClientSettings, max_retries: int | None) -> RetryPolicy:
    if max_retries is not None and max_retries < 0:
        raise ConfigurationError(f"max_retries must be 0 or more, not {max_retries!r}")
    return RetryPolicy(
        max_retries=settings.max_retries if max_retries is None else max_retries,
        backoff=settings.retry_backoff,
        backoff_max=settings.retry_backoff_max,
    )


class _Client:
    """The arguments both clients take; those left None come from ClientSettings
    (POWERCONTEXT_CLIENT_* variables)."""

    def __init__(
        self,
        server_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        settings: ClientSettings | None = None,
    ) -> None:
        settings = settings if settings is not None else ClientSettings()
        options = _http_options(settings, server_url, api_key, timeout)
        self._server_url: str = options["base_url"]
        self._open(options, _policy(settings, max_retries))

    def _open(self, http_options: dict[str, Any], policy: RetryPolicy) -> None:
        raise NotImplementedError

    @property
    def server_url(self) -> str:
        return self._server_url


class PowerContextClient(_Client):
    """Async SDK. `async with PowerContextClient() as client:` then
    `await client.memory.for_scope("project").search(SearchMemoryRequest(query="..."))`.

    Arguments left None come from ClientSettings (POWERCONTEXT_CLIENT_* variables).
    """

    def _open(self, http_options: dict[str, Any], policy: RetryPolicy) -> None:
        self._http = httpx.AsyncClient(**http_options)
        self._transport = AsyncTransport(self._http, policy)
        self.memory = AsyncMemoryClient(self._transport)

    async def health(self) -> wire.HealthStatus:
        return await self._transport.run(wire.health())

    async def ready(self) -> wire.ReadinessReport:
        return await self._transport.run(wire.ready())

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> PowerContextClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class SyncPowerContextClient(_Client):
    """Blocking SDK with the same surface: `client.memory.for_scope("project").search(...)`."""

    def _open(self, http_options: dict[str, Any], policy: RetryPolicy) -> None:
        self._http = httpx.Client(**http_options)
        self._transport = SyncTransport(self._http, policy)
        self.memory = SyncMemoryClient(self._transport)

    def health(self) -> wire.HealthStatus:
        return self._transport.run(wire.health())

    def ready(self) -> wire.ReadinessReport:
        return self._transport.run(wire.ready())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SyncPowerContextClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
