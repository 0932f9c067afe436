"""Contract: an erasure whose re-derivation could not re-embed, or failed, leaves no vector
derived from erased text, and `reindex --rebuild` repairs every version, active or not.

With contextual indexing a turn's tokens and vector hold its neighbours' words. When the
re-derivation after an erasure fails (the embedder, or the token rewrite) or no embedder is
configured, the neighbours' stored vectors are deleted rather than kept with the erased words,
and a rebuild then re-derives every version, retired and revised ones included, as if the
erased entry had never been written. The reference is a second scope with the same history
minus that entry (test_erasure_removed_neighbours_contract).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.erasure import ForgetMemoryRequest
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import RememberMemoryRequest, RetireMemoryRequest
from powercontext.memory.ports import EmbeddingModel, MemoryStore, VectorQuery, VersionPage
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from tests.breakable_embedder import BreakableEmbedder

from .test_erasure_removed_neighbours_contract import (
    EMBEDDER,
    SCENARIOS,
    SECRET,
    _assert_erased_everywhere,
    _index,
    _play,
)

INDEX = IndexTextConfig(context_before=2, context_after=2)


def _service(store: MemoryStore, embedder: EmbeddingModel | None) -> MemoryService:
    config = SearchConfig(min_similarity=-1.0, index=INDEX)
    return MemoryService(store, embedder=embedder, config=config)


async def _similarities(store: MemoryStore, scope: str) -> dict[str, set[float]]:
    """Each stored vector's similarity with a fixed query, by its version's text, read at
    every revision (as-of): what a vector search can find."""
    head = await store.head(scope)
    assert head is not None
    query = np.asarray(await EMBEDDER.embed_query("a walk by the river"), dtype=np.float32)
    found: dict[str, set[float]] = {}
    for revision in range(1, head + 1):
        query_at = VectorQuery(scope, revision, EMBEDDER.profile.profile_id, query, limit=100)
        hits = await store.vector_candidates(query_at)
        texts = await store.fetch_versions(scope, [hit.key for hit in hits])
        for hit in hits:
            found.setdefault(texts[hit.key].text, set()).add(round(hit.similarity, 6))
    return found


async def _assert_no_stale_vector(store: MemoryStore) -> None:
    """Every vector left in `erased` is the one the same version holds in `never`."""
    erased, never = await _similarities(store, "erased"), await _similarities(store, "never")
    assert erased
    for text, similarities in erased.items():
        assert similarities == never[text], text


async def _play_both(store: MemoryStore, embedder: EmbeddingModel) -> tuple[ScopedMemory, str]:
    erased = _service(store, embedder).for_scope("erased")
    secret = await _play(erased, SCENARIOS["several-removed"], secret=True)
    await _play(
        _service(store, EMBEDDER).for_scope("never"), SCENARIOS["several-removed"], secret=False
    )
    assert secret is not None
    return erased, secret


async def _rebuild_and_compare(store: MemoryStore) -> None:
    repairer = _service(store, EMBEDDER)
    await repairer.rebuild("erased")
    await _assert_erased_everywhere(store, repairer.for_scope("erased"))
    assert await _index(store, "erased") == await _index(store, "never")


async def test_a_failed_re_embedding_deletes_stale_vectors_and_a_rebuild_repairs_all(
    store: MemoryStore,
) -> None:
    embedder = BreakableEmbedder(dimension=64)
    erased, secret = await _play_both(store, embedder)
    embedder.broken = True
    await erased.forget(ForgetMemoryRequest(entry_ids=(secret,)), actor="dpo")
    await _assert_erased_everywhere(store, erased)  # tokens are rewritten before vectors
    await _assert_no_stale_vector(store)
    await _rebuild_and_compare(store)


async def test_a_failed_token_rewrite_deletes_stale_vectors_and_a_rebuild_repairs_all(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    erased, secret = await _play_both(store, EMBEDDER)

    async def refuse(*_args: Any) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patched:
        patched.setattr(store, "rewrite_index_tokens", refuse)
        await erased.forget(ForgetMemoryRequest(entry_ids=(secret,)), actor="dpo")
    await _assert_no_stale_vector(store)
    await _rebuild_and_compare(store)


async def test_an_erasure_without_an_embedder_deletes_the_neighbours_vectors(
    store: MemoryStore,
) -> None:
    _, secret = await _play_both(store, EMBEDDER)
    # Vectors of another model's profile hold the erased words too.
    other = HashingEmbedder(dimension=32)
    head = await store.head("erased")
    assert head is not None
    known = list(
        {
            v.key: v
            for revision in range(1, head + 1)
            for v in await store.list_versions(VersionPage("erased", revision, limit=100))
        }.values()
    )
    vectors = await other.embed_documents([v.text for v in known])
    items = [(v.key, np.asarray(x, dtype=np.float32)) for v, x in zip(known, vectors, strict=True)]
    await store.put_vectors("erased", other.profile.profile_id, items)
    without = _service(store, None).for_scope("erased")
    await without.forget(ForgetMemoryRequest(entry_ids=(secret,)), actor="dpo")
    await _assert_erased_everywhere(store, without)
    await _assert_no_stale_vector(store)
    head = await store.head("erased")
    assert head is not None
    query = np.asarray(await other.embed_query("walk"), dtype=np.float32)
    left = await store.vector_candidates(
        VectorQuery("erased", head, other.profile.profile_id, query, limit=100)
    )
    # The secret's neighbours in its thread (within two turns) lost theirs; a revised entry's
    # new version, indexed alone, keeps its own.
    found = await store.fetch_versions("erased", [c.key for c in left])
    assert {v.text for v in found.values()} == {"the ferry was early"}
    # Missing, the active ones are pending: reindex fills them, the rebuild the rest.
    filler = _service(store, EMBEDDER).for_scope("erased")
    assert await filler.pending_vectors() > 0
    await filler.reindex()
    assert await filler.pending_vectors() == 0
    await _rebuild_and_compare(store)


async def test_a_rebuild_re_derives_retired_members_of_a_batch(store: MemoryStore) -> None:
    index = IndexTextConfig(context_before=1, context_after=1, context_group_key="session")
    config = SearchConfig(min_similarity=-1.0, index=index)
    embedder = BreakableEmbedder(dimension=64)
    texts = ("morning walk by the river", SECRET, "evening tea on the porch", "the ferry")
    for scope in ("erased", "never"):
        memory = MemoryService(store, embedder=embedder, config=config).for_scope(scope)
        requests = [
            RememberMemoryRequest(text=t, metadata={"session": 1})
            for t in texts
            if scope == "erased" or t != SECRET
        ]
        written = {e.text: e for e in (await memory.remember_many(requests)).entries}
        await memory.retire(RetireMemoryRequest(citation=written[texts[0]].citation))
        if scope == "erased":
            embedder.broken = True
            forget = ForgetMemoryRequest(entry_ids=(written[SECRET].entry_id,))
            await memory.forget(forget, actor="dpo")
            embedder.broken = False
    repairer = MemoryService(store, embedder=EMBEDDER, config=config)
    await repairer.rebuild("erased")
    await _assert_erased_everywhere(store, repairer.for_scope("erased"))
    assert await _index(store, "erased") == await _index(store, "never")
