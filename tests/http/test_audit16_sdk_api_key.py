"""The SDK's API key as a user hands it over: read from a file (with its final newline), or
holding a character no HTTP header carries. Either used to fail every request as if the
server were down (after the retries), or with a raw UnicodeEncodeError."""

from __future__ import annotations

import pytest

from powercontext.client import ClientSettings, PowerContextClient, SyncPowerContextClient
from powercontext.memory.errors import ConfigurationError
from tests.http.conftest import KEY_A, Served


@pytest.mark.parametrize("padded", [KEY_A + "\n", KEY_A + "\r\n", f"  {KEY_A}\t"])
def test_a_key_with_surrounding_whitespace_is_sent_without_it(
    auth_server: Served, padded: str
) -> None:
    with SyncPowerContextClient(auth_server.url, api_key=padded, max_retries=0) as client:
        assert client.memory.for_scope("scope-a").head() is None


async def test_the_async_client_and_the_variable_strip_it_too(
    auth_server: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERCONTEXT_CLIENT_API_KEY", KEY_A + "\n")
    async with PowerContextClient(auth_server.url, max_retries=0) as client:
        assert await client.memory.for_scope("scope-a").head() is None


@pytest.mark.parametrize("key", ["clé-secrète-0001", "key\x00with-nul-01", "two\nlines-key-01"])
def test_a_key_no_header_can_carry_is_refused_when_the_client_is_made(key: str) -> None:
    for make in (SyncPowerContextClient, PowerContextClient):
        with pytest.raises(ConfigurationError) as refused:
            make("http://127.0.0.1:9", api_key=key)
        message = str(refused.value)
        assert "POWERCONTEXT_CLIENT_API_KEY" in message and "--api-key" in message
        assert key not in message  # a secret is never echoed


def test_the_variable_is_checked_as_the_argument_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_CLIENT_API_KEY", "ключ-доступа-01")
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_CLIENT_API_KEY"):
        SyncPowerContextClient("http://127.0.0.1:9", settings=ClientSettings())
