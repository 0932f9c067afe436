"""The PostgreSQL erasure audit's scenario (test_audit_erasure_postgres.py) on SQLite, as a
cross-check: after `forget`, no byte of the marker (text, metadata, speaker, thread, reasons,
tokens) is in the database file, its -wal and -shm, or the snapshots in `<db>.cache/`
(docs/storage.md, "Erasure: the bytes leave the file"), neither while the store is open nor
after it closed (its last checkpoint)."""

from __future__ import annotations

from pathlib import Path

from powercontext import open_runtime
from powercontext.memory.erasure import ForgetScopeRequest
from tests.integration.test_audit_erasure_postgres import (
    MARK,
    erase_and_check,
    marked_scope,
    settings,
)


def on_disk(directory: Path) -> bytes:
    """Every byte of every file under `directory` (the database, -wal, -shm, .cache/)."""
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


async def test_forget_leaves_no_marker_byte_on_sqlite(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    configured, reranker = settings(f"sqlite:///{directory / 'memory.db'}")
    async with open_runtime(configured, memory_reranker=reranker) as rt:
        written = await marked_scope(rt, "s")
        assert MARK.encode() in on_disk(directory)  # the control
        await erase_and_check(rt, "s", written)
        assert MARK.encode() not in on_disk(directory)
        assert b"survivor" in on_disk(directory)
    assert MARK.encode() not in on_disk(directory)


async def test_forget_scope_leaves_no_marker_byte_on_sqlite(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    configured, reranker = settings(f"sqlite:///{directory / 'memory.db'}")
    async with open_runtime(configured, memory_reranker=reranker) as rt:
        await marked_scope(rt, "s")
        await rt.memory.for_scope("s").forget_scope(ForgetScopeRequest())
        data = on_disk(directory)
        assert MARK.encode() not in data and b"survivor" not in data
    assert MARK.encode() not in on_disk(directory)
