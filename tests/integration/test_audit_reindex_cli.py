"""`powercontext reindex --rebuild` as an operator runs it: interrupted midway (Ctrl-C, then
kill -9) and run again, with searches going on throughout; and its answers to bad input."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.memory import SearchMemoryRequest
from powercontext.memory.scoped import ScopedMemory
from tests.integration.test_audit_reindex_profile import QUERIES, settings, turns

NEW = {"index_template": "{text}\n{metadata[tag]}"}
NEW_ENV = {"POWERCONTEXT_SERVER_RUNTIME_INDEX_TEMPLATE": NEW["index_template"]}
ENTRIES = 8_000


def _env(url: str, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env |= {
        "POWERCONTEXT_SERVER_DATABASE_URL": url,
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
        "POWERCONTEXT_SERVER_RUNTIME_VECTOR_BACKFILL_INTERVAL_SECONDS": "0",
    }
    return env | variables


def _reindex(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "powercontext.cli", "reindex", *args]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


async def _write(memory: ScopedMemory) -> None:
    written = turns(ENTRIES)
    for request in written:
        request.metadata["tag"] = "zebra"
    for start in range(0, ENTRIES, 1_000):
        await memory.remember_many(written[start : start + 1_000])


async def _ranked(memory: ScopedMemory) -> dict[tuple[str, str], list[object]]:
    found = {}
    for query in (*QUERIES, "zebra turn5"):
        for mode in ("fts", "hybrid"):
            page = await memory.search(SearchMemoryRequest(query=query, mode=mode, limit=20))
            found[query, mode] = [(hit.metadata["i"], round(hit.score, 6)) for hit in page.hits]
    return found


async def _interrupt_midway(url: str, how: signal.Signals) -> None:
    """Start a rebuild, search while it runs, and send `how` once some tokens are rewritten
    (the template's new word finds entries) but before the scope is marked rebuilt."""
    process = _reindex(_env(url, **NEW_ENV), "--rebuild")
    try:
        async with open_runtime(settings(url)) as rt:  # the old settings: what a server serves
            memory = rt.memory.for_scope("chat")
            deadline = time.monotonic() + 60
            while not (await memory.search(SearchMemoryRequest(query="zebra", mode="fts"))).hits:
                await memory.search(SearchMemoryRequest(query="lake canoe", mode="hybrid"))
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline, "the rebuild rewrote nothing in time"
            process.send_signal(how)
            _out, err = process.communicate(timeout=30)
            if process.returncode == 0:
                # The whole rebuild ran between the last check and the signal (a fast, idle
                # machine: 16,000 steps in 2 s in one CI run): nothing was interrupted.
                pytest.skip("the rebuild finished before the signal reached it")
            assert process.returncode == (130 if how == signal.SIGINT else -how), err
            assert "Traceback" not in err
            page = await memory.search(SearchMemoryRequest(query="lake canoe", mode="hybrid"))
            assert page.hits
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


async def test_an_interrupted_rebuild_runs_again_to_the_fresh_result(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    async with open_runtime(settings(url)) as rt:
        await _write(rt.memory.for_scope("chat"))
        head = await rt.memory.for_scope("chat").head()
    for how in (signal.SIGINT, signal.SIGKILL):
        await _interrupt_midway(url, how)
        async with open_runtime(settings(url, **NEW)) as rt:
            assert await rt.memory.profiles.stale_scopes() == ["chat"]  # not marked done
    again = _reindex(_env(url, **NEW_ENV), "--rebuild", "--json")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert json.loads(out) == {"chat": ENTRIES}
    async with open_runtime(settings(url, **NEW)) as rt:
        memory = rt.memory.for_scope("chat")
        assert await rt.memory.profiles.stale_scopes() == []
        assert await memory.head() == head  # no revision made or lost
        assert await memory.pending_vectors() == 0
        fresh = rt.memory.for_scope("fresh")
        await _write(fresh)
        assert await _ranked(memory) == await _ranked(fresh)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_rebuild_of_an_empty_database_says_there_was_nothing(tmp_path: Path) -> None:
    env = _env(f"sqlite:///{tmp_path / 'empty.db'}")
    done = _reindex(env, "--rebuild")
    out, err = done.communicate(timeout=60)
    assert (done.returncode, out, err) == (0, "re-indexed 0 entries in 0 scopes\n", "")
    done = _reindex(env, "--rebuild", "--json")
    out, err = done.communicate(timeout=60)
    assert (done.returncode, json.loads(out), err) == (0, {}, "")


def test_an_unknown_option_such_as_scope_is_a_usage_error(tmp_path: Path) -> None:
    done = _reindex(_env(f"sqlite:///{tmp_path / 'm.db'}"), "--rebuild", "--scope", "nope")
    _out, err = done.communicate(timeout=60)
    assert done.returncode == 2 and "No such option: --scope" in err


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _nobody_runs_python() -> bool:
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    check = subprocess.run([*NOBODY, sys.executable, "-c", "import powercontext"], check=False)
    return check.returncode == 0


def test_a_read_only_database_file_fails_in_one_line() -> None:
    if not _nobody_runs_python():
        pytest.skip("needs root, setpriv and a checkout another user can run")
    # Not under pytest's tmp_path: its parents are closed to other users.
    tmp_path = Path(tempfile.mkdtemp(prefix="powercontext-readonly-"))
    try:
        folder = tmp_path / "data"
        folder.mkdir()
        url = f"sqlite:///{folder / 'memory.db'}"
        asyncio.run(_populate(url))
        for path in (tmp_path, folder):
            path.chmod(0o777)  # the -wal and -shm files may be made: only the file is read-only
        (folder / "memory.db").chmod(0o644)
        command = [*NOBODY, sys.executable, "-m", "powercontext.cli", "reindex", "--rebuild"]
        env = _env(url, HOME=str(tmp_path))
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(tmp_path)
    assert done.returncode == 1, done.stderr
    errors = [line for line in _lines(done.stderr) if line.startswith("error ")]
    assert len(errors) == 1 and "read-only" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


async def _populate(url: str) -> None:
    async with open_runtime(settings(url, index_context_before=0)) as rt:
        await rt.memory.for_scope("chat").remember_many(turns(50))
