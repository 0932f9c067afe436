"""The SDK's configuration is checked when a client is made, and an invalid value is a
ConfigurationError naming what to fix (not an httpx error, nor a "cannot reach" after retries)."""

from __future__ import annotations

import time

import pytest

from powercontext.client import ClientSettings, PowerContextClient, SyncPowerContextClient
from powercontext.memory.errors import ConfigurationError


@pytest.mark.parametrize(
    "url",
    [
        "localhost:8000",
        "127.0.0.1:8000",
        "notaurl",
        "ftp://127.0.0.1:8000",
        "http://[::1",
        "http://",
    ],
)
@pytest.mark.parametrize("client", [SyncPowerContextClient, PowerContextClient])
def test_a_malformed_server_url_is_refused_at_once(
    url: str, client: type[SyncPowerContextClient] | type[PowerContextClient]
) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as caught:
        client(url)
    message = str(caught.value)
    assert repr(url) in message and "POWERCONTEXT_CLIENT_SERVER_URL" in message
    assert "http://127.0.0.1:8000" in message
    assert time.monotonic() - started < 1  # no connection attempted, no retry


def test_a_malformed_server_url_variable_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_CLIENT_SERVER_URL", "localhost:8000")
    with pytest.raises(ConfigurationError, match="'localhost:8000'"):
        SyncPowerContextClient()


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("https://memory.example.com/base/", "https://memory.example.com/base"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("  http://localhost:9  ", "http://localhost:9"),
    ],
)
def test_a_valid_server_url_is_kept(url: str, normalized: str) -> None:
    with SyncPowerContextClient(url) as client:
        assert client.server_url == normalized


def test_an_invalid_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_CLIENT_TIMEOUT", "0")
    with pytest.raises(ConfigurationError, match=r"POWERCONTEXT_CLIENT_TIMEOUT: .*greater than 0"):
        ClientSettings()
    monkeypatch.setenv("POWERCONTEXT_CLIENT_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_CLIENT_TIMEOUT"):
        SyncPowerContextClient("http://127.0.0.1:8000")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.0}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
    ],
)
def test_out_of_range_arguments_are_refused(options: dict[str, float], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        SyncPowerContextClient("http://127.0.0.1:8000", **options)  # type: ignore[arg-type]


def test_an_explicit_url_overrides_a_bad_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_CLIENT_SERVER_URL", "localhost:8000")
    with SyncPowerContextClient("http://127.0.0.1:8000") as client:
        assert client.server_url == "http://127.0.0.1:8000"
