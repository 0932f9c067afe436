"""`powercontext memory export | head -1` against a live server: when stdout's reader leaves,
the command stops quietly (exit 1, nothing on stderr but its progress), and the SDK's export
stream is closed in its own event loop, not left to the loop's shutdown."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from powercontext.cli import app, transfer_commands
from tests.http.conftest import Served

runner = CliRunner()


class _ReaderLeft(io.StringIO):
    """stdout of `... | head -1`: the first line goes through, then the pipe is closed."""

    def write(self, text: str) -> int:
        if self.getvalue():
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_export_into_a_closed_pipe_stops_quietly(
    open_server: Served,
    fresh_scope: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = {"POWERCONTEXT_CLIENT_SERVER_URL": open_server.url}
    header: dict[str, Any] = {"format": "powercontext.memory.export", "version": 1}
    header |= {"scope_id": "source", "revision": 1, "entry_count": 50}
    header |= {"exported_at": "2026-12-04T10:00:00Z"}
    entries = [{"entry_id": f"e{i}", "kind": "fact", "text": f"entry {i}"} for i in range(50)]
    source = tmp_path / "export.jsonl"
    source.write_text(
        "".join(json.dumps(line) + "\n" for line in [header, *entries]), encoding="utf-8"
    )
    imported = runner.invoke(
        app, ["memory", "import", str(source), "--scope", fresh_scope, "--json"], env=env
    )
    assert imported.exit_code == 0, imported.output

    sink = _ReaderLeft()

    @contextmanager
    def opened(path: str, mode: str) -> Iterator[io.StringIO]:
        yield sink

    monkeypatch.setattr(transfer_commands, "_opened", opened)
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        stopped = runner.invoke(app, ["memory", "export", "--scope", fresh_scope], env=env)
    assert stopped.exit_code == 1
    assert isinstance(stopped.exception, SystemExit)  # not the BrokenPipeError's traceback
    assert "error" not in stopped.stderr.lower()
    assert json.loads(sink.getvalue())["entry_count"] == 50
    assert not [r for r in caplog.records if "asynchronous generator" in r.getMessage()]
