"""`powercontext reindex --scope`: only the named scopes are embedded or rebuilt, the output
names them, and a scope the store lacks is a one-line usage error before any work."""

from __future__ import annotations

import json
from pathlib import Path

from powercontext import open_runtime
from powercontext.memory import RememberMemoryRequest
from tests.integration.test_audit_reindex_cli import NEW, NEW_ENV, _env, _reindex
from tests.integration.test_audit_reindex_profile import settings

SCOPES = {"chat": 5, "notes": 3, "plans": 2}


async def _write_without_vectors(url: str) -> None:
    async with open_runtime(settings(url, model="none")) as rt:
        for scope, count in SCOPES.items():
            await rt.memory.for_scope(scope).remember_many(
                [RememberMemoryRequest(text=f"{scope} entry {i}") for i in range(count)]
            )


async def _pending(url: str) -> dict[str, int]:
    async with open_runtime(settings(url)) as rt:
        return {scope: await rt.memory.pending_vectors(scope) for scope in SCOPES}


async def _stale(url: str) -> list[str]:
    async with open_runtime(settings(url, **NEW)) as rt:
        return await rt.memory.profiles.stale_scopes()


def _run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    process = _reindex(env, *args)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def _done(env: dict[str, str], *args: str) -> str:
    """The summary line of a run that succeeded (its stderr holds the progress bars)."""
    code, out, err = _run(env, *args)
    assert code == 0 and "error" not in err, err
    return out


async def test_reindex_of_one_scope_leaves_the_others_pending(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    await _write_without_vectors(url)
    assert await _pending(url) == SCOPES
    assert _done(_env(url), "--scope", "notes") == "embedded 3 entries in scope notes\n"
    assert await _pending(url) == {"chat": 5, "notes": 0, "plans": 2}
    done = _run(_env(url), "--scope", "plans", "--scope", "notes", "--scope", "plans", "--json")
    assert (done[0], json.loads(done[1]), done[2]) == (0, {"plans": 2, "notes": 0}, "")
    assert await _pending(url) == {"chat": 5, "notes": 0, "plans": 0}
    # Without --scope: every scope, in the output it always had.
    assert _done(_env(url)) == "embedded 5 entries in 3 scopes\n"


async def test_rebuild_of_named_scopes_leaves_the_others_stale(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    await _write_without_vectors(url)
    env = _env(url, **NEW_ENV)
    assert await _stale(url) == sorted(SCOPES)
    done = _done(env, "--rebuild", "--scope", "chat", "--scope", "plans")
    assert done == "re-indexed 7 entries in scopes chat, plans\n"
    assert await _stale(url) == ["notes"]  # untouched: still indexed under the old profile
    assert await _pending(url) == {"chat": 0, "notes": 3, "plans": 0}


async def test_an_unknown_scope_is_a_one_line_usage_error_before_any_work(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    await _write_without_vectors(url)
    for args in (("--scope", "chat", "--scope", "nope"), ("--rebuild", "--scope", "nope")):
        code, out, err = _run(_env(url, **NEW_ENV), *args)
        assert (code, out) == (2, ""), err
        assert err == "error not_found: --scope 'nope': no such scope in this store\n"
    assert await _pending(url) == SCOPES  # chat, named first, was not embedded either
