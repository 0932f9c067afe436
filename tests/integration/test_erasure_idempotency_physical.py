"""The body hash of an erased keyed write leaves the SQLite file and its WAL, not only the
`idempotency_keys` row a query reads (the row is updated in place: secure_delete and the
WAL truncation must take the old cell's bytes too).

The control shows the hash is on disk before `forget`, so the check after it can fail.
"""

from __future__ import annotations

from pathlib import Path

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore


def _on_disk(directory: Path) -> bytes:
    """Every byte of the database and its side files (-wal, -shm)."""
    return b"".join(path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file())


async def test_forget_leaves_no_byte_of_the_erased_write_s_hash(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    store = await SqliteMemoryStore.open(directory / "memory.sqlite3")
    try:
        memory = MemoryService(store, embedder=HashingEmbedder(dimension=32)).for_scope("s")
        for i in range(50):
            await memory.remember(
                RememberMemoryRequest(text=f"filler {i}", idempotency_key=f"f{i}")
            )
        batch = [
            RememberMemoryRequest(text="the vault code is 7481", idempotency_key="k"),
            RememberMemoryRequest(text="kept", idempotency_key="k"),
        ]
        written = await memory.remember_many(batch)
        recorded = await store.idempotent_write("s", "k")
        kept = await store.idempotent_write("s", "f7")
        assert recorded is not None and kept is not None
        assert recorded.body_hash.encode() in _on_disk(directory)  # the control

        await memory.forget(written.entries[0].entry_id)
        data = _on_disk(directory)
        assert recorded.body_hash.encode() not in data
        assert kept.body_hash.encode() in data  # other writes keep theirs
    finally:
        await store.close()
    assert recorded.body_hash.encode() not in _on_disk(directory)
