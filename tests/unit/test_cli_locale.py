"""The command writes UTF-8 whatever the locale: an emoji in a hit must not end a search with
a UnicodeEncodeError under a latin-1 terminal (a real process: CliRunner replaces stdout)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.unit.cli_local import local_env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "powercontext.cli", *args, "--local"],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONIOENCODING": "latin-1", **env},
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_a_latin1_locale_still_gets_every_character(tmp_path: Path) -> None:
    env = local_env(tmp_path)
    written = _cli(env, "memory", "remember", "-s", "p", "café 😀 東京")
    assert written.returncode == 0, written.stderr.decode("utf-8", "replace")
    found = _cli(env, "memory", "search", "-s", "p", "café", "--json")
    assert found.returncode == 0, found.stderr.decode("utf-8", "replace")
    assert "café 😀 東京" in found.stdout.decode("utf-8")
