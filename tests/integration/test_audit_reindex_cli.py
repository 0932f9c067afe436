"""`powercontext reindex --rebuild` as an operator runs it: interrupted midway (Ctrl-C, then
kill -9) and run again, with searches going on throughout; and its answers to bad input.

The interrupted rebuild is the real command in a child process, held after its first token
transaction (PAUSED_REBUILD) so the signal always lands mid-rebuild: racing the signal
against a rebuild that an idle machine finishes in 2 s tested nothing there."""

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
ENTRIES = 3_000
"""Two token transactions (2,000 versions each) for the rebuild run to its end."""
PAUSE_CHUNK = 50
"""Versions whose tokens the paused rebuild rewrites (one transaction) before it waits."""

PAUSED_REBUILD = """
import faulthandler, os, signal, sys, time
from pathlib import Path

# A child that outstays its signal shows the test where each of its threads is.
faulthandler.register(signal.SIGUSR1, all_threads=True)
# Ctrl-C as a terminal delivers it: a suite started in the background (`pytest &`, nohup)
# hands its children SIGINT ignored, and the command rightly keeps a handler it was given.
signal.signal(signal.SIGINT, signal.default_int_handler)

from powercontext.memory.indexing import rebuild

marker, chunk = Path(sys.argv.pop(1)), int(sys.argv.pop(1))
# Renamed internals fail here, loudly, rather than let the rebuild run unpaused.
assert isinstance(rebuild._TOKEN_CHUNK, int) and callable(rebuild.rederive)
rebuild._TOKEN_CHUNK = chunk
rederive = rebuild.rederive


def pausing(progress):
    def report(done, total):
        progress(done, total)
        if 0 < done < total:  # the first token transaction is committed
            Path(f"{marker}.tmp").write_text(f"{done}/{total}")
            os.replace(f"{marker}.tmp", marker)
            while True:  # until the test's signal ends the process
                time.sleep(1)

    return report


async def paused(*args):
    *rest, progress = args
    return await rederive(*rest, pausing(progress))


rebuild.rederive = paused
from powercontext.cli import main

sys.argv[0] = "powercontext"
main()
"""


def _env(url: str, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env |= {
        "POWERCONTEXT_SERVER_DATABASE_URL": url,
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
        "POWERCONTEXT_SERVER_RUNTIME_VECTOR_BACKFILL_INTERVAL_SECONDS": "0",
    }
    return env | variables


def _reindex(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return _run(env, "-m", "powercontext.cli", "reindex", *args)


def _paused_rebuild(env: dict[str, str], marker: Path) -> subprocess.Popen[str]:
    """`powercontext reindex --rebuild`, which writes `marker` and waits once it has rewritten
    the tokens of PAUSE_CHUNK versions."""
    return _run(env, "-c", PAUSED_REBUILD, str(marker), str(PAUSE_CHUNK), "reindex", "--rebuild")


def _run(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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


def _progress_at_pause(marker: Path) -> tuple[int, int] | None:
    """(steps done, steps in all) once the paused rebuild waits; None before (a few bytes,
    written whole: the child renames them into place)."""
    if not marker.exists():
        return None
    done, total = marker.read_text().split("/")
    return int(done), int(total)


def _ended(process: subprocess.Popen[str], seconds: float) -> str:
    """The stderr of `process` once it has ended; a failure showing where each of its threads
    is when it has not ended within `seconds`."""
    try:
        return process.communicate(timeout=seconds)[1]
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR1)  # faulthandler (PAUSED_REBUILD)
        time.sleep(2)
        process.kill()
        _out, err = process.communicate()
        pytest.fail(f"still running {seconds:g} s after the signal; its threads:\n{err[-6000:]}")


async def _interrupt_midway(url: str, how: signal.Signals, marker: Path) -> None:
    """Start a rebuild, search while it runs, and send `how` once it has rewritten some
    tokens (the template's new word finds them) and not the rest: before the scope is marked
    rebuilt."""
    process = _paused_rebuild(_env(url, **NEW_ENV), marker)
    try:
        async with open_runtime(settings(url)) as rt:  # the old settings: what a server serves
            memory = rt.memory.for_scope("chat")
            deadline = time.monotonic() + 60
            while (paused_at := _progress_at_pause(marker)) is None:
                await memory.search(SearchMemoryRequest(query="lake canoe", mode="hybrid"))
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline, "the rebuild did not reach its pause in time"
                await asyncio.sleep(0.02)
            # Midway: the first transaction's tokens are rewritten, the rest are not.
            assert (await memory.search(SearchMemoryRequest(query="zebra", mode="fts"))).hits
            assert paused_at == (PAUSE_CHUNK, 2 * ENTRIES)  # of the tokens, then the vectors
            assert process.poll() is None  # still paused: the signal finds it running
            process.send_signal(how)
            err = _ended(process, 30)
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
        await _interrupt_midway(url, how, tmp_path / f"paused-{how.name}")
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


def test_an_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    done = _reindex(_env(f"sqlite:///{tmp_path / 'm.db'}"), "--rebuild", "--scopes", "nope")
    _out, err = done.communicate(timeout=60)
    assert done.returncode == 2 and "No such option: --scopes" in err


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
