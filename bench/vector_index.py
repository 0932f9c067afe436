"""The embedded store's vector paths side by side: exact, sign-bit pre-filter, HNSW.

One SQLite file of `--entries` entries with the shared benchmark vectors (bench/corpus.py) is
searched through `SqliteMemoryStore.vector_candidates` (the real store path, thread hop
included) with each IndexOptions variant: first (cold) call time, which fills the matrix and
builds any index, then p50/p95/p99 of `--queries` warm calls asking for 40 rows (what a limit-10
search asks each channel) and recall@30 against exact search. Recall is tie-aware: a returned
row counts when its exact similarity reaches the exact 30th best.

`--vectors hashing` embeds the same texts with the feature-hashing embedder (sparse: ~14
non-zeros of 384), `--vectors lowrank` uses vectors of rank `--rank` (default 32) in a
positive cone; both are cases where raw sign bits lose answers (issue 20). Snapshots are off,
so every variant's cold call fills from the database. With PYTHONPATH pointing at an older
checkout, the same script measures that code ("before"). `lost` counts queries whose exact
best match has cosine >= 0.3 (the vector admission threshold) but that got no row >= 0.3.

    python bench/vector_index.py                     # 100k; bench/results/vector_index.json
    python bench/vector_index.py --entries 20000 --variants exact signbits
    python bench/vector_index.py --vectors hashing --variants exact "signbits (default)"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from powercontext.memory.ports import CommitRequest, VectorQuery

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as data

from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.ports import NewVersion, PlannedChange
from powercontext.memory.search.analyze import index_tokens
from powercontext.storage.sqlite import IndexOptions, SqliteMemoryStore

SCOPE, PROFILE = "bench", "bench-topic:384"
ADMISSION = 0.3
# Snapshots off: "cold" is a fill from the database, and variants must not map each other's
# files. (Checked by name so that this script also measures the code before issue 20.)
_FRESH: dict[str, Any] = (
    {"snapshots": False} if "snapshots" in IndexOptions.__dataclass_fields__ else {}
)
VARIANTS: dict[str, IndexOptions] = {
    "exact": IndexOptions(ann=False, **_FRESH),
    "signbits rescore 500": IndexOptions(
        rescore_min=500, rescore_per_result=10, rescore_fraction=0.0, **_FRESH
    ),
    "signbits (default)": IndexOptions(**_FRESH),
    "signbits rescore 2000": IndexOptions(rescore_min=2000, **_FRESH),
    "hnsw ef 256": IndexOptions(ann_method="hnsw", **_FRESH),
    "hnsw ef 512": IndexOptions(ann_method="hnsw", ann_ef_search=512, **_FRESH),
}


def _change(key: int) -> PlannedChange:
    text = f"row {key}"
    return PlannedChange(
        op="add",
        new=NewVersion(
            entry_id=f"e{key}",
            entry_version_id=f"v{key}",
            version=1,
            kind="fact",
            text=text,
            metadata={},
            index_tokens=index_tokens(text),
        ),
    )


async def build(path: Path, corpus: data.Corpus) -> None:
    store = await SqliteMemoryStore.open(path)
    try:
        head = None
        for offset in range(0, len(corpus.texts), 20_000):
            count = min(20_000, len(corpus.texts) - offset)
            result = await store.commit(
                CommitRequest(SCOPE, head, [_change(offset + i) for i in range(count)])
            )
            head = result.revision
            pairs = list(zip(result.keys, corpus.vectors[offset : offset + count], strict=True))
            await store.put_vectors(SCOPE, PROFILE, pairs)
    finally:
        await store.close()


async def measure(path: Path, options: IndexOptions, corpus: data.Corpus) -> dict[str, Any]:
    store = await SqliteMemoryStore.open(path, index=options)
    try:
        head = await store.head(SCOPE)
        assert head is not None
        started = time.perf_counter()
        await store.vector_candidates(
            VectorQuery(SCOPE, head, PROFILE, corpus.query_vectors[0], limit=40)
        )
        cold_ms = (time.perf_counter() - started) * 1000
        samples, correct, lost = [], 0, 0
        for query in corpus.query_vectors:
            started = time.perf_counter()
            found = await store.vector_candidates(
                VectorQuery(SCOPE, head, PROFILE, query, limit=40)
            )
            samples.append((time.perf_counter() - started) * 1000)
            truth = data.exact_top(corpus.vectors, query, 30)
            threshold = float(corpus.vectors[truth[-1]] @ query) - 1e-5
            rows = np.asarray([c.key - 1 for c in found[:30]], dtype=np.int64)
            correct += int(np.count_nonzero(corpus.vectors[rows] @ query >= threshold))
            admitted = float(corpus.vectors[truth[0]] @ query) >= ADMISSION
            lost += admitted and not any(c.similarity >= ADMISSION for c in found)
        return {
            "cold_first_ms": round(cold_ms, 1),
            "recall_at_30": round(correct / (30 * len(corpus.query_vectors)), 4),
            "lost": lost,
            **data.percentiles(samples),
        }
    finally:
        await store.close()


def hashing_corpus(entries: int, queries: int) -> data.Corpus:
    texts = data.texts(entries)
    asked = data.queries(texts, queries)
    embedder = HashingEmbedder(data.DIMENSION)
    return data.Corpus(texts, embedder.embed_sync(texts), asked, embedder.embed_sync(asked))


def lowrank_corpus(entries: int, queries: int, rank: int) -> data.Corpus:
    rng = np.random.default_rng(3)
    basis = np.abs(rng.standard_normal((rank, data.DIMENSION))).astype(np.float32)

    def draw(count: int) -> Any:
        vectors = rng.standard_normal((count, rank)).astype(np.float32) @ basis
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    asked = [f"query {i}" for i in range(queries)]
    return data.Corpus(data.texts(entries), draw(entries), asked, draw(queries))


CORPORA = {"corpus": data.build, "hashing": hashing_corpus, "lowrank": lowrank_corpus}


async def run(
    entries: int, queries: int, names: list[str], vectors: str, rank: int
) -> dict[str, Any]:
    corpus = (
        lowrank_corpus(entries, queries, rank)
        if vectors == "lowrank"
        else CORPORA[vectors](entries, queries)
    )
    with tempfile.TemporaryDirectory(prefix="pc-vectors-") as tmp:
        path = Path(tmp) / "vectors.db"
        started = time.perf_counter()
        await build(path, corpus)
        print(f"built {entries:,} rows in {time.perf_counter() - started:.1f} s", flush=True)
        rows = {}
        for name in names:
            rows[name] = await measure(path, VARIANTS[name], corpus)
            print(f"{name:24} {json.dumps(rows[name])}", flush=True)
    return {
        "entries": entries,
        "queries": queries,
        "vectors": vectors,
        **({"rank": rank} if vectors == "lowrank" else {}),
        "variants": rows,
        "machine": data.machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--vectors", choices=list(CORPORA), default="corpus")
    parser.add_argument("--rank", type=int, default=32, help="rank of --vectors lowrank")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.output is None:
        suffix = "" if args.vectors == "corpus" else f"_{args.vectors}"
        suffix += f"{args.rank}" if args.vectors == "lowrank" else ""
        args.output = data.RESULTS / f"vector_index{suffix}.json"
    payload = asyncio.run(run(args.entries, args.queries, args.variants, args.vectors, args.rank))
    args.output.parent.mkdir(exist_ok=True)
    args.output.write_text(json.dumps(payload, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
