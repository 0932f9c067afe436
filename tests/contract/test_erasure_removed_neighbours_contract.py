"""Contract: an erasure leaves no erased word in the index of any version, active or not.

With contextual indexing a thread turn's tokens and vector hold its neighbours' words. A turn
retired (or revised) before its neighbour is erased keeps the index it had when it left the
thread, which as-of search reads. After the erasure every version must hold exactly the index
it would hold had the erased entry never been written: the reference is a second scope with
the same history minus that entry, compared version by version (tokens and vector).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.erasure import ForgetMemoryRequest
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.models import (
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.ports import FtsQuery, MemoryStore, VectorQuery
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.search.analyze import analyze
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService

SECRET = "zebracorn passphrase quokka"
ERASED_TERMS = ("zebracorn", "passphras", "quokka")
A, C, D, E = (
    "morning walk by the river",
    "evening tea on the porch",
    "the ferry was late",
    "we hiked the ridge",
)
EMBEDDER = HashingEmbedder(dimension=64)
Step = tuple[str, ...]

SCENARIOS: dict[str, list[Step]] = {
    "retire-before": [("write", A), ("write", SECRET), ("write", C), ("write", D),
                      ("write", E), ("retire", A)],
    "revise-before": [("write", A), ("write", SECRET), ("write", C), ("write", D),
                      ("revise", A, "morning run")],
    "several-removed": [("write", A), ("write", C), ("write", SECRET), ("write", D),
                        ("retire", C), ("revise", D, "the ferry was early"), ("write", E),
                        ("retire", A)],
    "secret-first": [("write", SECRET), ("write", A), ("write", C), ("retire", A)],
    "removed-before-the-secret": [("write", A), ("write", C), ("retire", A),
                                  ("write", SECRET), ("write", D), ("retire", D)],
}  # fmt: skip


def _memory(store: MemoryStore, scope: str, index: IndexTextConfig) -> ScopedMemory:
    config = SearchConfig(min_similarity=-1.0, index=index)
    return MemoryService(store, embedder=EMBEDDER, config=config).for_scope(scope)


async def _play(memory: ScopedMemory, steps: list[Step], *, secret: bool) -> str | None:
    """Run the steps (one remember per turn); returns the secret's entry id."""
    entries: dict[str, Any] = {}
    for op, text, *rest in steps:
        if op == "write":
            if text == SECRET and not secret:
                continue
            request = RememberMemoryRequest(text=text, thread="chat")
            entries[text] = (await memory.remember(request)).entries[0]
        elif op == "retire":
            await memory.retire(RetireMemoryRequest(citation=entries[text].citation))
        else:
            revise = ReviseMemoryRequest(citation=entries[text].citation, text=rest[0])
            await memory.revise(revise)
    return entries[SECRET].entry_id if secret else None


async def _index(store: MemoryStore, scope: str) -> dict[str, tuple[frozenset[str], float]]:
    """Every version ever stored (active at some revision), by text: its tokens as the
    full-text channel reads them and its vector's similarity with a fixed query."""
    head = await store.head(scope)
    assert head is not None
    words = [w for text in (A, C, D, E, SECRET, "morning run ferry early") for w in analyze(text)]
    query = np.asarray(await EMBEDDER.embed_query("a walk by the river"), dtype=np.float32)
    profile = EMBEDDER.profile.profile_id
    found: dict[str, tuple[frozenset[str], float]] = {}
    for revision in range(1, head + 1):
        fts = await store.fts_candidates(FtsQuery(scope, revision, words, limit=100))
        vectors = await store.vector_candidates(
            VectorQuery(scope, revision, profile, query, limit=100)
        )
        similarity = {c.key: round(c.similarity, 6) for c in vectors}
        texts = await store.fetch_versions(scope, [c.key for c in fts])
        for candidate in fts:
            text = texts[candidate.key].text
            seen = (candidate.tokens, similarity[candidate.key])
            assert found.setdefault(text, seen) == seen  # one index per version
    return found


async def _assert_erased_everywhere(store: MemoryStore, memory: ScopedMemory) -> None:
    head = await store.head(memory.scope_id)
    assert head is not None
    for revision in range(1, head + 1):
        query = FtsQuery(memory.scope_id, revision, ERASED_TERMS, limit=50)
        assert await store.fts_candidates(query) == []
        for word in SECRET.split():
            request = SearchMemoryRequest(query=word, mode="fts", revision=revision, limit=20)
            assert not (await memory.search(request)).hits


@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_erasure_rederives_retired_and_revised_neighbours(
    store: MemoryStore, scenario: str
) -> None:
    index = IndexTextConfig(context_before=2, context_after=2)
    erased, reference = _memory(store, "erased", index), _memory(store, "never", index)
    secret = await _play(erased, SCENARIOS[scenario], secret=True)
    await _play(reference, SCENARIOS[scenario], secret=False)
    assert secret is not None
    await erased.forget(ForgetMemoryRequest(entry_ids=(secret,)), actor="dpo")
    await _assert_erased_everywhere(store, erased)
    assert await _index(store, "erased") == await _index(store, "never")


async def test_erasure_rederives_the_retired_members_of_a_batch(store: MemoryStore) -> None:
    # Thread-less entries grouped by a metadata key within their batch.
    index = IndexTextConfig(context_before=1, context_after=1, context_group_key="session")
    erased, reference = _memory(store, "erased", index), _memory(store, "never", index)
    for memory, texts in ((erased, (A, SECRET, C, D)), (reference, (A, C, D))):
        requests = [RememberMemoryRequest(text=t, metadata={"session": 1}) for t in texts]
        written = {e.text: e for e in (await memory.remember_many(requests)).entries}
        await memory.retire(RetireMemoryRequest(citation=written[A].citation))
        await memory.revise(ReviseMemoryRequest(citation=written[C].citation, text="morning run"))
        if memory is erased:
            forget = ForgetMemoryRequest(entry_ids=(written[SECRET].entry_id,))
            await memory.forget(forget, actor="dpo")
    await _assert_erased_everywhere(store, erased)
    assert await _index(store, "erased") == await _index(store, "never")


SECOND = "narwhal cipher okapi"


class _Pausing:
    """The store, with its next token rewrite (once armed) held until released: a writer's
    derived index stored late, after another writer's erasure."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.armed = False
        self.paused = asyncio.Event()
        self.released = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def rewrite_index_tokens(self, scope_id: str, items: Any) -> None:
        if self.armed:
            self.armed = False
            self.paused.set()
            await self.released.wait()
        await self.inner.rewrite_index_tokens(scope_id, items)


async def _late(pausing: _Pausing, work: Any, meanwhile: Any) -> None:
    """Run `work` until its first token rewrite, `meanwhile` to its end, then the rest."""
    pausing.armed = True
    late = asyncio.create_task(work)
    await asyncio.wait_for(pausing.paused.wait(), 30)
    await meanwhile
    pausing.released.set()
    await late


async def _erased_everywhere(store: MemoryStore, memory: ScopedMemory, text: str) -> None:
    head = await store.head(memory.scope_id)
    assert head is not None
    for revision in range(1, head + 1):
        found = await store.fts_candidates(
            FtsQuery(memory.scope_id, revision, analyze(text), limit=50)
        )
        assert found == [], (text, revision)


async def test_a_write_stores_its_neighbours_index_after_an_erasure(store: MemoryStore) -> None:
    """A turn committed before an erasure rewrites its neighbours from a read that still held
    the erased turn (the first, in the window of the two it widens), after the erasure
    re-derived them: it derives them again."""
    index = IndexTextConfig(context_before=2, context_after=2)
    pausing = _Pausing(store)
    erased = _memory(pausing, "erased", index)  # type: ignore[arg-type]
    secret = await _play(erased, [("write", SECRET), ("write", A), ("write", C)], secret=True)
    assert secret is not None
    forget = erased.forget(ForgetMemoryRequest(entry_ids=(secret,)), actor="dpo")
    await _late(pausing, erased.remember(RememberMemoryRequest(text=D, thread="chat")), forget)
    await _erased_everywhere(store, erased, SECRET)
    steps: list[Step] = [("write", A), ("write", C), ("write", D)]
    await _play(_memory(store, "never", index), steps, secret=False)
    assert await _index(store, "erased") == await _index(store, "never")


@pytest.mark.parametrize(
    "thread",
    [
        pytest.param((SECRET, A, C, SECOND, D), id="apart"),
        pytest.param((A, SECRET, SECOND, C, D), id="adjacent"),
    ],
)
async def test_an_erasure_stores_its_rederivation_after_a_second_erasure(
    store: MemoryStore, thread: tuple[str, ...], caplog: pytest.LogCaptureFixture
) -> None:
    """Two erasures of one thread: the first one's re-derivation is read before the second
    committed and stored after the second's. Apart, it holds the second erased turn's words
    (in the window of a turn it re-derives); adjacent, it names the second erased turn too,
    which is gone by then. Either way it is made again, with no error."""
    index = IndexTextConfig(context_before=2, context_after=2)
    pausing = _Pausing(store)
    erased = _memory(pausing, "erased", index)  # type: ignore[arg-type]
    ids = {}
    for text in thread:
        written = await erased.remember(RememberMemoryRequest(text=text, thread="chat"))
        ids[text] = written.entries[0].entry_id
    first = erased.forget(ForgetMemoryRequest(entry_ids=(ids[SECRET],)), actor="dpo")
    second = erased.forget(ForgetMemoryRequest(entry_ids=(ids[SECOND],)), actor="dpo")
    await _late(pausing, first, second)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
    for text in (SECRET, SECOND):
        await _erased_everywhere(store, erased, text)
    steps: list[Step] = [("write", A), ("write", C), ("write", D)]
    await _play(_memory(store, "never", index), steps, secret=False)
    assert await _index(store, "erased") == await _index(store, "never")
