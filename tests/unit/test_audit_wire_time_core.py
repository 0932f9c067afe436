"""Times are ISO 8601 text (or `datetime` objects) everywhere, not only over HTTP: the runtime's
models, the CLI's --occurred-at and --filter refuse a number instead of reading it as Unix
seconds (which turned 20240101 into 1970-08-23)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from powercontext.cli import app
from powercontext.memory import RememberMemoryRequest
from powercontext.memory.filters import MemoryFilter
from tests.unit.cli_local import local_env, runner


@pytest.mark.parametrize("value", [0, 20240101, 1.5, "1700000000", True])
def test_the_runtime_models_refuse_a_number_as_a_time(value: object) -> None:
    with pytest.raises(ValidationError, match="ISO 8601"):
        RememberMemoryRequest.model_validate({"text": "x", "occurred_at": value})
    with pytest.raises(ValidationError, match="ISO 8601"):
        MemoryFilter.model_validate({"created_after": value})


def test_the_runtime_models_take_datetimes_and_iso_text() -> None:
    moment = datetime(2024, 1, 1, tzinfo=UTC)
    assert RememberMemoryRequest(text="x", occurred_at=moment).occurred_at == moment
    parsed = RememberMemoryRequest.model_validate({"text": "x", "occurred_at": "2024-01-01"})
    assert parsed.occurred_at == moment
    assert MemoryFilter.model_validate({"occurred_before": "2024-01-01T00:00:00Z"}).occurred_before


def test_the_cli_refuses_a_number_in_occurred_at_and_filter(tmp_path: Path) -> None:
    env = local_env(tmp_path)
    wrote = runner.invoke(
        app, ["memory", "remember", "x", "-s", "p", "--occurred-at", "20240101", "--local"], env=env
    )
    assert wrote.exit_code != 0 and "ISO 8601" in wrote.output, wrote.output
    assert "error validation_error: --occurred-at: " in wrote.output  # the option typed
    listed = runner.invoke(
        app,
        ["memory", "list", "-s", "p", "--local", "--filter", json.dumps({"created_after": 0})],
        env=env,
    )
    assert listed.exit_code != 0 and "ISO 8601" in listed.output, listed.output
    fine = runner.invoke(
        app,
        ["memory", "remember", "x", "-s", "p", "--occurred-at", "2024-01-01", "--local"],
        env=env,
    )
    assert fine.exit_code == 0, fine.output
