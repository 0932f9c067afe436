"""An erased entry's bytes leave the SQLite file and its WAL, not only the query results.

The control half of each test shows the bytes are on disk before `forget`, so the check after
it can fail: without secure_delete, the FTS5 merge or the WAL truncation, they stay.
"""

from __future__ import annotations

from pathlib import Path

from powercontext.memory.erasure import ForgetScopeRequest
from powercontext.memory.models import RememberMemoryRequest, RetireMemoryRequest
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore

SECRET = "xylophonist-qwertyuiop-7741"
METADATA = "metadatum-plumbus-9921"


def _on_disk(directory: Path) -> bytes:
    """Every byte of the database and its side files (-wal, -shm)."""
    return b"".join(path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file())


async def test_forget_leaves_no_byte_of_the_text_in_the_file_or_wal(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    store = await SqliteMemoryStore.open(directory / "memory.sqlite3")
    try:
        memory = MemoryService(store).for_scope("s")
        written = await memory.remember(
            RememberMemoryRequest(text=f"my {SECRET} words", metadata={"tag": METADATA})
        )
        await memory.retire(RetireMemoryRequest(citation=written.entries[0].citation))
        await memory.remember_many(
            [RememberMemoryRequest(text=f"filler entry {i} " * 20) for i in range(200)]
        )
        assert SECRET.encode() in _on_disk(directory)  # the control: it is on disk now
        await memory.forget(written.entries[0].entry_id)
        data = _on_disk(directory)
        assert SECRET.encode() not in data
        assert METADATA.encode() not in data
        # FTS5 keeps tokens, not text: the rare token must be gone too.
        assert b"qwertyuiop" not in data
        assert b"filler" in data  # the rest of the scope is still there
    finally:
        await store.close()
    assert SECRET.encode() not in _on_disk(directory)


async def test_forget_scope_leaves_no_byte_of_any_entry(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    store = await SqliteMemoryStore.open(directory / "memory.sqlite3")
    try:
        memory = MemoryService(store).for_scope("s")
        await memory.remember_many(
            [RememberMemoryRequest(text=f"{SECRET} entry {i}") for i in range(50)]
        )
        assert SECRET.encode() in _on_disk(directory)
        await memory.forget_scope(ForgetScopeRequest())
        assert b"xylophonist" not in _on_disk(directory)
    finally:
        await store.close()
