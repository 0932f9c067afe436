"""LanceDB's hybrid search on the LoCoMo data, scored like PowerContext's coarse pool.

    pip install lancedb            # the peer (not a PowerContext dependency)
    python bench/lancedb_peer.py                    # dev file, text as the harness writes it
    python bench/lancedb_peer.py --with-date        # the session date appended to the text

The same entries as `powercontext bench locomo --granularity turn` (one row per turn, the
harness's `Speaker: text` with the caption appended), the same vectors (the local
all-MiniLM-L6-v2, embedded in batches of 64 as the indexer does) and the same questions
(categories 1-4 with valid evidence). LanceDB gets its native full-text index (English
stemming and stop words, its defaults) and an exact vector search, fused by its
`RRFReranker` (k = 60), top 30. Recall, hit and MRR come from the harness's own metric
functions, so the figures compare one to one with the coarse-pool rows of docs/locomo.md and
docs/search-quality.md. One table per conversation in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from powercontext.bench.locomo.dataset import load_dataset
from powercontext.bench.locomo.ingest import plan_ingest
from powercontext.bench.locomo.metrics import aggregate, score_ranking, summary
from powercontext.inference.embeddings import build_embedding_model
from powercontext.memory.ports import EmbeddingModel

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
POOL = 30
_QUERY_SYNTAX = re.compile(r"[^\w\s]")


async def _vectors(embedder: EmbeddingModel, texts: list[str]) -> list[list[float]]:
    out: list[list[float]] = []
    for start in range(0, len(texts), 64):
        out.extend(list(v) for v in await embedder.embed_documents(texts[start : start + 64]))
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    import lancedb
    from lancedb.rerankers import RRFReranker

    dataset = load_dataset(args.data)
    embedder = build_embedding_model("local:all-minilm-l6-v2")
    assert embedder is not None
    rows_by_mode: dict[str, list[tuple[int, dict[str, float]]]] = {"hybrid": [], "fts": []}
    rows_by_mode["vector"] = []
    latencies: list[float] = []
    query_fallbacks = 0
    with tempfile.TemporaryDirectory() as tmp:
        db = lancedb.connect(tmp)
        for conversation in dataset.conversations:
            plan = plan_ingest(conversation, "turn")
            texts = [
                r.text + (f"\n{r.metadata['session_date']}" if args.with_date else "")
                for r in plan.requests
            ]
            vectors = await _vectors(embedder, texts)
            table = db.create_table(
                conversation.sample_id.replace("-", "_"),
                data=[
                    {"text": text, "dia_id": r.metadata["dia_id"], "vector": vector}
                    for text, r, vector in zip(texts, plan.requests, vectors, strict=True)
                ],
            )
            table.create_fts_index("text")
            for qa in conversation.qa:
                if qa.category == 5 or not qa.evidence:
                    continue
                query_vector = list(await embedder.embed_query(qa.question))
                started = time.perf_counter()
                try:
                    hits = _hybrid(table, qa.question, query_vector, RRFReranker)
                except Exception:  # its query parser rejects some punctuation
                    query_fallbacks += 1
                    hits = _hybrid(
                        table, _QUERY_SYNTAX.sub(" ", qa.question), query_vector, RRFReranker
                    )
                latencies.append((time.perf_counter() - started) * 1000)
                ranking = [frozenset((h["dia_id"],)) for h in hits]
                ks = (5, 10, POOL)
                rows_by_mode["hybrid"].append(
                    (qa.category, score_ranking(ranking, qa.evidence, ks))
                )
                vector_hits = table.search(query_vector).metric("cosine").limit(POOL).to_list()
                rows_by_mode["vector"].append(
                    (
                        qa.category,
                        score_ranking(
                            [frozenset((h["dia_id"],)) for h in vector_hits], qa.evidence, ks
                        ),
                    )
                )
                cleaned = _QUERY_SYNTAX.sub(" ", qa.question)
                fts_hits = table.search(cleaned, query_type="fts").limit(POOL).to_list()
                rows_by_mode["fts"].append(
                    (
                        qa.category,
                        score_ranking(
                            [frozenset((h["dia_id"],)) for h in fts_hits], qa.evidence, ks
                        ),
                    )
                )
    lat = summary(latencies)
    return {
        "peer": f"lancedb {lancedb.__version__}",
        "with_date": args.with_date,
        "by_mode": {mode: aggregate(rows) for mode, rows in rows_by_mode.items()},
        "hybrid_latency_ms": {"p50": lat["p50"], "p95": lat["p95"]},
        "hybrid_mean_ms": statistics.fmean(latencies) if latencies else None,
        "query_syntax_fallbacks": query_fallbacks,
    }


def _hybrid(table: Any, question: str, vector: list[float], reranker: Any) -> list[Any]:
    query = (
        table.search(query_type="hybrid")
        .vector(vector)
        .text(question)
        .metric("cosine")
        .rerank(reranker(K=60))
        .limit(POOL)
    )
    result: list[Any] = query.to_list()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--with-date", action="store_true", help="append the session date")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    for mode, groups in result["by_mode"].items():
        o = groups["overall"]
        print(
            f"lancedb {mode:6s} R@5 {o['recall@5']:.3f} R@10 {o['recall@10']:.3f} "
            f"R@30 {o['recall@30']:.3f} MRR@30 {o['mrr@30']:.3f}"
        )
    print(json.dumps({k: v for k, v in result.items() if k != "by_mode"}))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
