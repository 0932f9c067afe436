"""Export and import at their edges: text with the characters `str.splitlines` cuts at (the
SDK's export once did), the CLI piping between two database files through a non-UTF-8
locale, and the CLI reading an export file a bounded line at a time."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from powercontext.cli import app, transfer_commands
from powercontext.client import PowerContextClient, SyncPowerContextClient
from powercontext.memory import RememberMemoryRequest
from powercontext.memory.transfer_lines import MAX_LINE_BYTES
from tests.contract.test_transfer_round_trip_contract import _BoundedReadsOnly, _header
from tests.http.conftest import Served
from tests.unit.cli_local import local_env

TEXT = "one line\u2028still one\x85and\u2029one 😀"


async def test_sdk_export_cuts_lines_at_newlines_only(
    open_server: Served, fresh_scope: str
) -> None:
    async with PowerContextClient(open_server.url) as client:
        source = client.memory.for_scope(fresh_scope)
        await source.remember_many(
            [
                RememberMemoryRequest(text=TEXT, metadata={"k\u2028": "v\x85"}),
                RememberMemoryRequest(text="plain"),
            ]
        )
        lines = [line async for line in source.export_lines()]
        assert len(lines) == 3 and json.loads(lines[1])["text"] == TEXT
        result = await client.memory.for_scope(f"{fresh_scope}-a").import_lines(lines)
        assert result.added == 2
    with SyncPowerContextClient(open_server.url) as sync:
        again = list(sync.memory.for_scope(f"{fresh_scope}-a").export_lines())
    assert [json.loads(line)["metadata"] for line in again[1:]] == [{"k\u2028": "v\x85"}, {}]


def _cli(
    env: dict[str, str], args: list[str], stdin: bytes | None = None, charset: str = "latin-1"
) -> Any:
    # A latin-1 locale: stdin and stdout are latin-1 unless the command says otherwise.
    result = CliRunner(charset=charset).invoke(app, args, input=stdin, env=env)
    assert result.exit_code == 0, result.output
    return result


def test_cli_pipes_one_database_file_into_another(tmp_path: Path) -> None:
    first, second = local_env(tmp_path / "a"), local_env(tmp_path / "b")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    remember = ["memory", "remember", "--local", "-s", "p", "--thread", "t", TEXT]
    _cli(first, [*remember, "--metadata", '{"x": 0.1, "n": 9223372036854775807}'], None, "utf-8")
    exported = _cli(first, ["memory", "export", "--local", "-s", "p"]).stdout_bytes
    assert json.loads(exported.decode("utf-8").split("\n")[1])["text"] == TEXT
    _cli(second, ["memory", "import", "-", "--local", "-s", "q"], stdin=exported)
    copied = _cli(second, ["memory", "export", "--local", "-s", "q"]).stdout_bytes
    entry = json.loads(copied.decode("utf-8").split("\n")[1])
    assert (entry["text"], entry["metadata"]) == (TEXT, {"x": 0.1, "n": 2**63 - 1})


def test_cli_reads_an_export_file_a_bounded_line_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = _BoundedReadsOnly(_header(1) + "\n" + "x" * (2 * MAX_LINE_BYTES))

    @contextmanager
    def opened(path: str, mode: str) -> Iterator[io.StringIO]:
        yield handle

    monkeypatch.setattr(transfer_commands, "_opened", opened)
    env = local_env(tmp_path)
    result = CliRunner().invoke(
        app, ["memory", "import", "big.jsonl", "--local", "-s", "q"], env=env
    )
    assert result.exit_code != 0
    assert not isinstance(result.exception, AssertionError), "the file was read unbounded"
    assert "line 2 exceeds" in result.output
