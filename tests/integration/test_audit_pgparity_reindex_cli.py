"""`powercontext reindex --scope` on PostgreSQL, run side by side with SQLite: only the named
scopes are embedded or rebuilt, the output is word for word the same, and a scope the store
does not hold is the same one-line exit 2 before any work."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.memory import RetireMemoryRequest
from tests import pg_server
from tests.integration.test_audit_reindex2_scope_cli import (
    SCOPES,
    _pending,
    _run,
    _stale,
    _write_without_vectors,
)
from tests.integration.test_audit_reindex_cli import NEW_ENV, _env
from tests.integration.test_audit_reindex_profile import settings

pytestmark = pytest.mark.postgres

Transcript = list[tuple[int, str, str]]


def _urls(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "pg").mkdir()
    return {
        "sqlite": f"sqlite:///{tmp_path / 'memory.db'}",
        "postgres": asyncio.run(pg_server.database_url(tmp_path / "pg")),
    }


def _summary(code: int, out: str, err: str) -> tuple[int, str, str]:
    """A run as compared across backends: its progress bars (stderr) only when it failed."""
    return (code, out, err if code else "")


def _embed_by_scope(url: str) -> tuple[Transcript, list[dict[str, int]]]:
    asyncio.run(_write_without_vectors(url))
    said, pending = [], [asyncio.run(_pending(url))]
    for args in (
        ("--scope", "notes"),
        ("--scope", "plans", "--scope", "notes", "--scope", "plans", "--json"),
    ):
        said.append(_summary(*_run(_env(url), *args)))
        pending.append(asyncio.run(_pending(url)))
    said.append(_summary(*_run(_env(url))))
    pending.append(asyncio.run(_pending(url)))
    return said, pending


def test_reindex_of_named_scopes_says_and_does_the_same_on_both(tmp_path: Path) -> None:
    runs = {backend: _embed_by_scope(url) for backend, url in _urls(tmp_path).items()}
    assert runs["postgres"] == runs["sqlite"]
    said, pending = runs["postgres"]
    assert said[0] == (0, "embedded 3 entries in scope notes\n", "")
    assert said[1][0] == 0 and json.loads(said[1][1]) == {"plans": 2, "notes": 0}
    assert said[2] == (0, "embedded 5 entries in 3 scopes\n", "")
    assert pending == [
        SCOPES,
        {"chat": 5, "notes": 0, "plans": 2},
        {"chat": 5, "notes": 0, "plans": 0},
        {"chat": 0, "notes": 0, "plans": 0},
    ]


def _rebuild_by_scope(url: str) -> tuple[Transcript, list[str], dict[str, int]]:
    asyncio.run(_write_without_vectors(url))
    env = _env(url, **NEW_ENV)
    said = [_summary(*_run(env, "--rebuild", "--scope", "chat", "--scope", "plans"))]
    stale = asyncio.run(_stale(url))
    said.append(_summary(*_run(env, "--rebuild", "--scope", "notes", "--json")))
    return said, stale, asyncio.run(_pending(url))


def test_rebuild_of_named_scopes_leaves_the_others_stale_on_both(tmp_path: Path) -> None:
    runs = {backend: _rebuild_by_scope(url) for backend, url in _urls(tmp_path).items()}
    assert runs["postgres"] == runs["sqlite"]
    said, stale, pending = runs["postgres"]
    assert said[0] == (0, "re-indexed 7 entries in scopes chat, plans\n", "")
    assert stale == ["notes"]  # untouched until its own rebuild
    assert said[1][0] == 0 and json.loads(said[1][1]) == {"notes": 3}
    assert pending == {"chat": 0, "notes": 0, "plans": 0}


async def _retire_every_entry(url: str, scope: str) -> None:
    async with open_runtime(settings(url, model="none")) as rt:
        memory = rt.memory.for_scope(scope)
        for entry in (await memory.list(limit=1000)).entries:
            await memory.retire(RetireMemoryRequest(citation=entry.citation))


def _refusals(url: str) -> tuple[Transcript, dict[str, int]]:
    asyncio.run(_write_without_vectors(url))
    asyncio.run(_retire_every_entry(url, "plans"))  # held, with nothing active
    said = [
        _run(_env(url, **NEW_ENV), *args)
        for args in (
            ("--scope", "chat", "--scope", "nope"),
            ("--rebuild", "--scope", "nope"),
            ("--scope", "it's"),
            ("--scope", "Chat"),
        )
    ]
    said.append(_summary(*_run(_env(url), "--scope", "plans")))
    return said, asyncio.run(_pending(url))


def test_an_unknown_scope_is_the_same_exit_2_before_any_work(tmp_path: Path) -> None:
    runs = {backend: _refusals(url) for backend, url in _urls(tmp_path).items()}
    assert runs["postgres"] == runs["sqlite"]
    said, pending = runs["postgres"]
    assert said[:4] == [
        (2, "", "error not_found: --scope 'nope': no such scope in this store\n"),
        (2, "", "error not_found: --scope 'nope': no such scope in this store\n"),
        (2, "", 'error not_found: --scope "it\'s": no such scope in this store\n'),
        (2, "", "error not_found: --scope 'Chat': no such scope in this store\n"),
    ]
    assert said[4] == (0, "embedded 0 entries in scope plans\n", "")
    assert pending == {"chat": 5, "notes": 3, "plans": 0}
