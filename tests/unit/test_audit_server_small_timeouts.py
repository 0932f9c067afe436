"""HTTP_BODY_READ_TIMEOUT_SECONDS is a finite, positive number of seconds, bounded like the
runtime's timeouts: `inf` would let a client that stops mid-body hold its request for good,
and `nan` or `0` is no timeout. The runtime's float timeouts already refuse both."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from powercontext.config import HttpConfig, InferenceConfig, RuntimeConfig

BODY_TIMEOUT = "POWERCONTEXT_SERVER_HTTP_BODY_READ_TIMEOUT_SECONDS"
NOT_SECONDS = ["inf", "+Infinity", "-inf", "nan", "0", "-1", "1e308", "3601"]


@pytest.mark.parametrize("value", NOT_SECONDS)
def test_the_body_read_timeout_refuses_what_is_no_timeout(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        HttpConfig(body_read_timeout_seconds=value)
    assert [error["loc"] for error in caught.value.errors()] == [("body_read_timeout_seconds",)]


@pytest.mark.parametrize("value", ["0.5", "30", "3600"])
def test_the_body_read_timeout_takes_seconds(value: str) -> None:
    assert HttpConfig(body_read_timeout_seconds=value).body_read_timeout_seconds == float(value)


@pytest.mark.parametrize(
    ("group", "field"),
    [
        (RuntimeConfig, "search_timeout_seconds"),
        (RuntimeConfig, "memory_rerank_timeout_seconds"),
        (RuntimeConfig, "memory_rerank_cache_ttl_seconds"),
        (RuntimeConfig, "vector_backfill_interval_seconds"),
        (InferenceConfig, "generation_timeout_seconds"),
    ],
)
@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_the_other_float_timeouts_refuse_non_finite_values(
    group: type[RuntimeConfig | InferenceConfig], field: str, value: str
) -> None:
    with pytest.raises(ValidationError):
        group(**{field: value})


def test_server_run_with_an_infinite_body_timeout_is_one_configuration_error(
    tmp_path: Path,
) -> None:
    """`--host 0.0.0.0` without keys ends in the public-bind refusal when the setting passes,
    so a missing check fails here instead of serving."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("POWERCONTEXT_")}
    env |= {
        "POWERCONTEXT_HOME": str(tmp_path / "home"),
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "none",
        BODY_TIMEOUT: "inf",
    }
    done = subprocess.run(
        [sys.executable, "-m", "powercontext.cli", "server", "run", "--host", "0.0.0.0"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error configuration_error:"), done.stderr
    assert BODY_TIMEOUT in done.stderr and "finite" in done.stderr
    assert "refusing to bind" not in done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_the_rerank_endpoint_threshold_is_a_finite_score(value: str) -> None:
    # Every score fails `>= nan` and `>= inf`: the endpoint stage would keep nothing, silently.
    with pytest.raises(ValidationError):
        RuntimeConfig(memory_rerank_endpoint_threshold=value)
    assert (
        RuntimeConfig(memory_rerank_endpoint_threshold="-2.5").memory_rerank_endpoint_threshold
        == -2.5
    )
