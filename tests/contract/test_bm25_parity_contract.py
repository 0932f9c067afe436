"""Contract: SQLite and PostgreSQL score full text with the one BM25F of search.bm25.

The same corpus (own words with repeats, neighbours' `_` words written later by a token
rewrite, speaker `@` words) is written to both backends; every query must rank the same
entries in the same order, with scores equal within 1e-6 (SQLite's cache holds float32).
Only additions and rewrites: the backends' statistics differ by design once versions retire
(SQLite's span every cached version, PostgreSQL's the versions active at the head).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from powercontext.memory.ports import CommitRequest, FtsCandidate, FtsQuery, MemoryStore
from powercontext.memory.search.fields import FieldWeights
from powercontext.storage.postgres import maxscore
from powercontext.storage.sqlite import SqliteMemoryStore
from tests import pg_server

from .builders import add

pytestmark = pytest.mark.postgres

VOCABULARY = [f"w{i}" for i in range(40)]
ZIPF = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
SPEAKERS = ["ann", "bob", "w3"]  # a speaker named like a word: the fields must stay apart


def _corpus(rng: random.Random, size: int) -> list[str]:
    documents = []
    for _ in range(size):
        words = rng.choices(VOCABULARY, ZIPF, k=rng.randint(1, 12))
        if rng.random() < 0.4:
            words.append("@" + rng.choice(SPEAKERS))
        documents.append(" ".join(words))
    return documents


def _context(rng: random.Random, documents: list[str], position: int) -> str:
    """The document's tokens widened by a neighbour's own words, as contextual indexing does."""
    neighbour = documents[rng.randrange(len(documents))].split()
    return " ".join([documents[position], *("_" + w for w in neighbour if w[0] != "@")])


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[MemoryStore, MemoryStore]]:
    sqlite = await SqliteMemoryStore.open(tmp_path / "memory.sqlite3")
    postgres = await pg_server.open_store(tmp_path)
    try:
        yield sqlite, postgres
    finally:
        await sqlite.close()
        await postgres.close()


async def _ranked(
    store: MemoryStore, terms: list[str], limit: int, fields: FieldWeights, common: int | None
) -> list[tuple[int, float]]:
    """(position in the corpus, score) best first: positions, since the keys differ."""
    found: list[FtsCandidate] = await store.fts_candidates(
        FtsQuery("s", 3, terms, limit=limit, fields=fields, common_term_entries=common)
    )
    versions = await store.fetch_versions("s", [c.key for c in found])
    return [(int(versions[c.key].text.split("#")[1]), c.score) for c in found]


@pytest.mark.parametrize(
    ("first_pass_budget", "common"),
    [(4096, None), (8, None), (8, 30)],
    ids=["one-pass", "two-pass", "two-pass-common-terms"],
)
async def test_the_same_corpus_ranks_alike_on_sqlite_and_postgresql(
    stores: tuple[MemoryStore, MemoryStore],
    monkeypatch: pytest.MonkeyPatch,
    first_pass_budget: int,
    common: int | None,
) -> None:
    # A tiny budget sends PostgreSQL through its second pass; the ranking must not change.
    monkeypatch.setattr(maxscore, "FIRST_PASS_DF_BUDGET", first_pass_budget)
    rng = random.Random(23)
    documents = _corpus(rng, 240)
    rewrites = {i: _context(rng, documents, i) for i in rng.sample(range(240), 80)}
    # The text carries the corpus position; the tokens are what is indexed.
    batches = [[f"{documents[i]} #{i}" for i in range(s, s + 80)] for s in (0, 80, 160)]
    for store in stores:
        await _write_positions(store, batches, documents, rewrites)
    queries = [rng.sample([*VOCABULARY, *SPEAKERS, "absent"], rng.randint(1, 6)) for _ in range(40)]
    compared = 0
    for fields in (FieldWeights(), FieldWeights(context=0.0, speaker=0.0)):
        for terms in queries:
            limit = rng.choice([5, 20, 60])
            sqlite = await _ranked(stores[0], terms, limit, fields, common)
            postgres = await _ranked(stores[1], terms, limit, fields, common)
            assert [p for p, _ in postgres] == [p for p, _ in sqlite], (terms, limit, fields)
            for (_, expected), (_, actual) in zip(sqlite, postgres, strict=True):
                assert actual == pytest.approx(expected, rel=1e-6, abs=1e-6), terms
            compared += len(sqlite)
    assert compared > 1000  # the queries found plenty to compare


async def _write_positions(
    store: MemoryStore, batches: list[list[str]], documents: list[str], rewrites: dict[int, str]
) -> None:
    keys: list[int] = []
    for revision, batch in enumerate(batches):
        changes = [add(text, tokens=text.split(" #")[0]) for text in batch]
        keys.extend((await store.commit(CommitRequest("s", revision or None, changes))).keys)
    assert len(keys) == len(documents)
    await store.rewrite_index_tokens("s", [(keys[i], tokens) for i, tokens in rewrites.items()])
