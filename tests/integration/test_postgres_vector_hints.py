"""Two processes on one PostgreSQL database: one deletes vectors (as an erasure does when it
cannot re-embed a neighbour), the other must count them as missing at once.

Each process keeps hints that spare rescanning a million versions (every version up to a
revision, or below a key, has its vector). They were dropped only in the deleting process, so
the other served a `vector_pending` of 0 and its backfill skipped the versions until it
restarted. Two stores on one database stand for the two processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.service import MemoryService
from powercontext.storage.postgres import PostgresMemoryStore
from tests import pg_server

pytestmark = pytest.mark.postgres

SCOPE = "hints"
EMBEDDER = HashingEmbedder(dimension=64)
PROFILE = EMBEDDER.profile.profile_id


async def test_a_deletion_in_one_process_shows_in_the_others_counts(tmp_path: Path) -> None:
    url = await pg_server.database_url(tmp_path)
    async with (
        await PostgresMemoryStore.open(url) as erasing,
        await PostgresMemoryStore.open(url) as serving,
    ):
        memory = MemoryService(erasing, embedder=EMBEDDER).for_scope(SCOPE)
        requests = [RememberMemoryRequest(text=f"turn {i}") for i in range(6)]
        written = await memory.remember_many(requests)
        head = written.memory_ref.revision
        stored = await erasing.entry_heads(SCOPE, [e.entry_id for e in written.entries])
        ordered = sorted(version.key for version in stored.values())

        # The serving process learns that every version has its vector (its hint).
        assert await serving.missing_vector_count(SCOPE, head, PROFILE) == 0
        await erasing.delete_vectors(SCOPE, [ordered[-1]])
        assert await serving.missing_vector_count(SCOPE, head, PROFILE) == 1
        missing = await serving.versions_missing_vectors(SCOPE, PROFILE, limit=9)
        # The serving process now holds a hint: nothing is missing below the last key.
        assert [version.key for version in missing] == [ordered[-1]]

        await erasing.delete_vectors(SCOPE, [ordered[1]])
        assert await serving.missing_vector_count(SCOPE, head, PROFILE) == 2
        missing = await serving.versions_missing_vectors(SCOPE, PROFILE, limit=9)
        assert [version.key for version in missing] == [ordered[1], ordered[-1]]
