"""An erased turn's words leave the SQLite file even where a retired or revised neighbour
held them: with contextual indexing that neighbour's tokens include them (`_word`), and it
keeps them after it leaves its thread, for as-of search.

The control half shows the neighbour's tokens hold the words on disk before `forget` (the
secret's own row is the only other holder, and its words are checked apart from its text).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.storage.sqlite import SqliteMemoryStore

SECRET = "xylophonist qwertyuiop plumbusian"
STEMS = (b"xylophonist", b"qwertyuiop", b"plumbusian")


def _on_disk(directory: Path) -> bytes:
    """Every byte of the database and its side files (-wal, -shm)."""
    return b"".join(path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file())


def _neighbour_tokens(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT f.tokens FROM entry_fts f JOIN entry_versions v ON v.key = f.rowid "
            "WHERE v.removed_revision IS NOT NULL"
        ).fetchall()
    finally:
        conn.close()
    return [row[0] for row in rows]


@pytest.mark.parametrize("op", ["retire", "revise"])
async def test_a_removed_neighbour_keeps_no_erased_word_on_disk(tmp_path: Path, op: str) -> None:
    directory = tmp_path / "db"
    path = directory / "memory.sqlite3"
    index = IndexTextConfig(context_before=2, context_after=2)
    config = SearchConfig(min_similarity=-1.0, index=index)
    store = await SqliteMemoryStore.open(path)
    try:
        memory = MemoryService(store, embedder=HashingEmbedder(), config=config).for_scope("s")
        first = await memory.remember(RememberMemoryRequest(text="morning walk", thread="t"))
        secret = await memory.remember(RememberMemoryRequest(text=SECRET, thread="t"))
        await memory.remember(RememberMemoryRequest(text="evening tea", thread="t"))
        citation = first.entries[0].citation
        if op == "retire":
            await memory.retire(RetireMemoryRequest(citation=citation))
        else:
            await memory.revise(ReviseMemoryRequest(citation=citation, text="morning run"))
        await memory.remember_many(
            [RememberMemoryRequest(text=f"filler entry {i} " * 20) for i in range(200)]
        )
        # The control: the removed neighbour's tokens hold the words, found as of before.
        assert any("_qwertyuiop" in tokens for tokens in _neighbour_tokens(path))
        request = SearchMemoryRequest(query="qwertyuiop", mode="fts", revision=3)
        assert "morning walk" in [hit.text for hit in (await memory.search(request)).hits]

        await memory.forget(secret.entries[0].entry_id)
        data = _on_disk(directory)
        assert not [stem for stem in STEMS if stem in data]
        assert not any("qwertyuiop" in tokens for tokens in _neighbour_tokens(path))
        for revision in (2, 3, 4):
            request = SearchMemoryRequest(query=SECRET, mode="fts", revision=revision)
            assert not (await memory.search(request)).hits
        assert b"filler" in data  # the rest of the scope is still there
    finally:
        await store.close()
    assert not [stem for stem in STEMS if stem in _on_disk(directory)]
