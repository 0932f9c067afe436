"""`powercontext server run --host X`: a host that is no IP address or host name is one error
line and exit 2 (as a port in use is), named as such before the public-bind check could
mistake it for a public address; addresses and names that are hosts still serve."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from powercontext.memory.errors import ConfigurationError
from powercontext.server.runner import _check_host
from tests.http.processes import free_port, wait_until_healthy

RUN = (sys.executable, "-m", "powercontext.cli", "server", "run")
HOST_VARIABLE = "POWERCONTEXT_SERVER_HTTP_HOST"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("POWERCONTEXT_")}
    return env | {
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{tmp_path / 'host.db'}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "none",
    }


@pytest.mark.parametrize(
    ("host", "workers", "problem"),
    [
        ("not a host!", "1", "not an IP address or a host name"),
        ("not a host!", "2", "not an IP address or a host name"),
        ("", "1", "the host is empty"),
        ("", "2", "the host is empty"),
        ("999.1.1.1", "1", "not an IP address or a host name"),
        ("[::1]", "1", "without brackets"),
    ],
)
def test_a_bad_host_is_one_error_line(
    tmp_path: Path, host: str, workers: str, problem: str
) -> None:
    done = subprocess.run(
        [*RUN, "--host", host, "--port", str(free_port()), "--workers", workers],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error configuration_error: cannot listen on {host!r}: ")
    assert problem in done.stderr and "--host" in done.stderr and HOST_VARIABLE in done.stderr
    assert not (tmp_path / "host.db").exists()  # refused before opening the database


@pytest.mark.parametrize(("host", "workers"), [("localhost", "1"), ("::1", "1"), ("::1", "2")])
def test_a_host_name_and_an_ipv6_address_still_serve(
    tmp_path: Path, host: str, workers: str
) -> None:
    port = free_port()
    process = subprocess.Popen(
        [*RUN, "--host", host, "--port", str(port), "--workers", workers],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    shown = f"[{host}]" if ":" in host else host
    try:
        wait_until_healthy(process, f"http://{shown}:{port}", seconds=30)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "0.0.0.0",
        "::1",
        "::",
        "fe80::1%lo",
        "localhost",
        "localhost.",
        "api-1.example.com",
        "memory_service",
        "10.0.0.1",
    ],
)
def test_addresses_and_host_names_pass_the_syntax_check(host: str) -> None:
    _check_host(host)


@pytest.mark.parametrize(
    "host",
    [
        "",
        "  ",
        " localhost",
        "not a host!",
        "999.1.1.1",
        "1.2.3",
        "[::1]",
        "-leading.example",
        "a..b",
        "x" * 64,
        ".".join(["a" * 63] * 4),  # 255 characters
        "host:80",
        "http://localhost",
    ],
)
def test_what_is_no_host_is_a_configuration_error(host: str) -> None:
    with pytest.raises(ConfigurationError, match=HOST_VARIABLE):
        _check_host(host)
