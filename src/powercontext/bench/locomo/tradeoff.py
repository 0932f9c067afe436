"""Candidate limit trade-off on LoCoMo: pool recall against the rerank prompt's size.

For fixed candidate limits (10, 20, 30, 40, 50) and for the by-class candidate policy
(`powercontext.memory.candidates.by_class.v2`), every question is searched with the limit the
policy gives it. Without a reranker a search with limit c returns exactly the coarse pool a
reranker with candidate limit c would see (same channel depth, same fusion), so no model is
needed: the pool's evidence recall is scored per LoCoMo category, and the prompt size is the
length of what the listwise policy would send for that pool (its system instructions and the
user prompt from the policy's own `build_listwise_prompt`), in characters.

    python -m powercontext.bench.locomo.tradeoff --data locomo-dev.json --out runs/tradeoff

With `--tokens-model llamacpp:smollm2` (issue 22's local model, the `[llm]` extra) the prompt
is also counted in that model's tokens. Writes `tradeoff.json`, `tradeoff.md` and (with
matplotlib) `tradeoff.png` into --out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx

from powercontext import ServerSettings
from powercontext.bench.locomo.backends import WriteMode, bench_settings, open_in_process
from powercontext.bench.locomo.dataset import load_dataset
from powercontext.bench.locomo.ingest import covered_dia_ids, plan_ingest
from powercontext.bench.locomo.metrics import OVERALL, aggregate, score_ranking
from powercontext.bench.locomo.tradeoff_report import BY_CLASS, markdown, write_tradeoff
from powercontext.memory.models import MemoryHit, SearchMemoryRequest
from powercontext.memory.rerank.listwise import LISTWISE_INSTRUCTIONS, build_listwise_prompt
from powercontext.memory.search.analyze import AnalyzerConfig
from powercontext.memory.search.candidates import (
    BY_CLASS_POLICY_ID,
    DEFAULT_CLASS_LIMITS,
    classify_query,
)
from powercontext.memory.values import SearchMode

MEASURED_LIMITS = (10, 20, 30, 40, 50)
"""The fixed points of the table and of the curve check. 40 is in the curve on purpose: recall
is concave in the limit, so a policy near 40 candidates would otherwise beat the straight line
from 30 to 50 without choosing anything by class."""
ISSUE_LIMITS = (10, 20, 30, 50)


def prompt_text(query: str, pool: Sequence[MemoryHit], answer_k: int, max_chars: int) -> str:
    """The user prompt of one listwise rerank of `pool`; empty when no call would be made."""
    if not pool:
        return ""
    return build_listwise_prompt(query, tuple(pool), answer_k, max_chars).text


def prompt_chars(query: str, pool: Sequence[MemoryHit], answer_k: int, max_chars: int) -> int:
    """Characters of one listwise rerank request: system instructions plus user prompt."""
    if not pool:
        return 0  # an empty pool makes no rerank call
    return len(LISTWISE_INSTRUCTIONS) + len(prompt_text(query, pool, answer_k, max_chars))


class TokenCounter:
    """Counts tokens with a local llama.cpp model's own tokenizer (its `/tokenize` route): the
    system instructions plus the user prompt, without the chat template's few framing tokens."""

    def __init__(self, address: str, model: str) -> None:
        self.model = model
        self._client = httpx.AsyncClient(base_url=address, timeout=60)
        self._system: int | None = None

    async def _tokens(self, text: str) -> int:
        reply = await self._client.post("/tokenize", json={"content": text})
        reply.raise_for_status()
        return len(reply.json()["tokens"])

    async def count(self, user_prompt: str) -> int:
        if not user_prompt:
            return 0
        if self._system is None:
            self._system = await self._tokens(LISTWISE_INSTRUCTIONS)
        return self._system + await self._tokens(user_prompt)

    async def aclose(self) -> None:
        await self._client.aclose()


@contextlib.asynccontextmanager
async def token_counter(address: str | None, model: str) -> AsyncIterator[TokenCounter | None]:
    """A TokenCounter on the server at `address`, closed on leaving; None without one."""
    if not address:
        yield None
        return
    tokens = TokenCounter(address, model)
    try:
        yield tokens
    finally:
        await tokens.aclose()


def curve_recall(fixed: Sequence[tuple[float, float]], size: float) -> float:
    """The fixed-limit curve's recall at `size`, linearly interpolated between its points
    (flat beyond the first and the last)."""
    curve = sorted(fixed)
    if size <= curve[0][0]:
        return curve[0][1]
    for (s0, r0), (s1, r1) in pairwise(curve):
        if s0 <= size <= s1:
            return r0 + (r1 - r0) * (size - s0) / (s1 - s0)
    return curve[-1][1]


def on_or_above_curve(fixed: list[tuple[float, float]], point: tuple[float, float]) -> bool:
    """Whether (size, recall) reaches the fixed-limit curve at `size`."""
    size, recall = point
    return recall >= curve_recall(fixed, size)


QuestionRow = dict[str, Any]
"""One question's measurement: conversation, category, query_class and, per measured limit,
its pool recall, prompt chars (and tokens) and candidate count."""


async def measure_questions(
    data: Path,
    out: Path,
    *,
    limits: Sequence[int] = MEASURED_LIMITS,
    mode: SearchMode = "auto",
    answer_k: int = 10,
    base_settings: ServerSettings | None = None,
    tokens: TokenCounter | None = None,
    write: WriteMode = "turns",
    conversations: Sequence[str] | None = None,
) -> tuple[list[QuestionRow], dict[str, Any]]:
    """Every question with evidence, searched once per limit in `limits`; and the run's facts.
    Any policy whose limits are among `limits` is then scored from these rows alone."""
    dataset = load_dataset(data)
    base = base_settings if base_settings is not None else ServerSettings()
    needed = sorted(set(limits))
    settings = bench_settings(base, rerank=False, top_k=max(needed), database_path=out / "t.db")
    runtime_config = settings.runtime
    analyzer = AnalyzerConfig(
        language=runtime_config.analyzer_language,
        drop_query_stopwords=runtime_config.analyzer_drop_query_stopwords,
        strip_clitics=runtime_config.analyzer_strip_clitics,
    )
    max_chars = runtime_config.memory_rerank_max_candidate_chars
    chosen = [c for c in dataset.conversations if not conversations or c.sample_id in conversations]
    rows: list[QuestionRow] = []
    async with open_in_process(settings) as backend:
        for conversation in chosen:
            plan = plan_ingest(conversation, "turn")
            await backend.ingest(plan.scope_id, plan.requests, write)
            for qa in conversation.qa:
                if not qa.evidence:
                    continue
                measured: dict[str, dict[str, float]] = {}
                for limit in needed:
                    request = SearchMemoryRequest(query=qa.question, limit=limit, mode=mode)
                    pool = (await backend.search(plan.scope_id, request)).hits
                    ranking = [frozenset(covered_dia_ids(dict(h.metadata))) for h in pool]
                    recall = score_ranking(ranking, qa.evidence, [limit])[f"recall@{limit}"]
                    metrics = {
                        "pool_recall": recall,
                        "prompt_chars": float(prompt_chars(qa.question, pool, answer_k, max_chars)),
                        "candidates": float(len(pool)),
                    }
                    if tokens is not None:
                        text = prompt_text(qa.question, pool, answer_k, max_chars)
                        metrics["prompt_tokens"] = float(await tokens.count(text))
                    measured[str(limit)] = metrics
                rows.append(
                    {
                        "conversation": conversation.sample_id,
                        "question": qa.index,
                        "category": qa.category,
                        "category_name": qa.category_name,
                        "query_class": classify_query(qa.question, analyzer),
                        "limits": measured,
                    }
                )
        describe = backend.describe()
    facts = {
        "data": str(data),
        "dataset_sha256": dataset.sha256,
        "conversations": [c.sample_id for c in chosen],
        "mode": mode,
        "write": write,
        "answer_k": answer_k,
        "max_candidate_chars": max_chars,
        "tokens": (
            f"{tokens.model} tokenizer (system + user prompt, no chat template)"
            if tokens is not None
            else "not measured: no local rerank model was given (--tokens-model)"
        ),
        "backend": describe,
    }
    return rows, facts


def policy_table(
    rows: Sequence[QuestionRow], class_limits: Mapping[str, int], fixed: Sequence[int]
) -> dict[str, dict[str, dict[str, float]]]:
    """Per policy (fixed-c for c in `fixed`, and by_class under `class_limits`) and per
    category: mean pool recall, prompt size and candidate count."""
    chosen: dict[str, list[tuple[int, dict[str, float]]]] = {
        **{f"fixed-{c}": [] for c in fixed},
        BY_CLASS: [],
    }
    for row in rows:
        for c in fixed:
            chosen[f"fixed-{c}"].append((row["category"], row["limits"][str(c)]))
        limit = class_limits[row["query_class"]]
        chosen[BY_CLASS].append((row["category"], row["limits"][str(limit)]))
    return {policy: aggregate(scored) for policy, scored in chosen.items()}


def curve_margin(
    table: Mapping[str, Mapping[str, Mapping[str, float]]], fixed: Sequence[int] | None = None
) -> float:
    """By-class overall recall minus the fixed-limit curve's recall at its mean prompt size,
    the curve linearly interpolated through the fixed points `fixed` (default: every fixed
    point of `table`), flat beyond."""
    curve = sorted(
        (point[OVERALL]["prompt_chars"], point[OVERALL]["pool_recall"])
        for policy, point in table.items()
        if policy.startswith("fixed-")
        and (fixed is None or int(policy.removeprefix("fixed-")) in fixed)
    )
    size, recall = (table[BY_CLASS][OVERALL][m] for m in ("prompt_chars", "pool_recall"))
    return recall - curve_recall(curve, size)


def summarize(
    rows: Sequence[QuestionRow],
    facts: Mapping[str, Any],
    class_limits: Mapping[str, int] | None = None,
    fixed: Sequence[int] = MEASURED_LIMITS,
) -> dict[str, Any]:
    limits_by_class = {**DEFAULT_CLASS_LIMITS, **(class_limits or {})}
    table = policy_table(rows, limits_by_class, fixed)
    classes: dict[str, Counter[str]] = {}
    for row in rows:
        classes.setdefault(row["category_name"], Counter())[row["query_class"]] += 1
    margin = curve_margin(table)
    return {
        **facts,
        "candidate_policy": BY_CLASS_POLICY_ID,
        "class_limits": limits_by_class,
        "policies": table,
        "query_classes": {name: dict(counts) for name, counts in classes.items()},
        "by_class_curve_margin": round(margin, 6),
        # The issue's four points only: the straight 30-50 segment sits below fixed-40.
        "by_class_curve_margin_without_40": round(curve_margin(table, ISSUE_LIMITS), 6),
        "by_class_on_or_above_fixed_curve": margin >= 0,
    }


async def measure_tradeoff(
    data: Path,
    out: Path,
    *,
    mode: SearchMode = "auto",
    answer_k: int = 10,
    class_limits: dict[str, int] | None = None,
    base_settings: ServerSettings | None = None,
    tokens: TokenCounter | None = None,
    write: WriteMode = "turns",
    conversations: Sequence[str] | None = None,
) -> dict[str, Any]:
    limits = sorted(
        set(MEASURED_LIMITS) | set({**DEFAULT_CLASS_LIMITS, **(class_limits or {})}.values())
    )
    rows, facts = await measure_questions(
        data,
        out,
        limits=limits,
        mode=mode,
        answer_k=answer_k,
        base_settings=base_settings,
        tokens=tokens,
        write=write,
        conversations=conversations,
    )
    return summarize(rows, facts, class_limits)


def split_ids(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@contextlib.contextmanager
def token_server(spec: str | None) -> Iterator[str | None]:
    """The address of a local llama.cpp server for `spec`'s tokenizer; None without a spec."""
    if not spec:
        yield None
        return
    from powercontext.inference.llamacpp import LlamaCppServer, model_path

    server = LlamaCppServer.start(model_path(spec), threads=1, context_size=512)
    try:
        yield server.address
    finally:
        server.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("locomo-tradeoff"))
    parser.add_argument("--mode", choices=["auto", "fts", "vector", "hybrid"], default="auto")
    parser.add_argument("--answer-k", type=int, default=10)
    parser.add_argument("--write", choices=["turns", "batch"], default="turns")
    parser.add_argument(
        "--tokens-model",
        default=None,
        help="a llamacpp: model (e.g. llamacpp:smollm2) whose tokenizer counts prompt tokens",
    )
    parser.add_argument("--conversations", default=None, help="sample ids, comma separated")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with token_server(args.tokens_model) as address:
        results = asyncio.run(_measure(args, address))
    write_tradeoff(results, args.out)
    print(markdown(results))


async def _measure(args: argparse.Namespace, token_address: str | None) -> dict[str, Any]:
    async with token_counter(token_address, args.tokens_model) as tokens:
        return await measure_tradeoff(
            args.data,
            args.out,
            mode=args.mode,
            answer_k=args.answer_k,
            tokens=tokens,
            write=args.write,
            conversations=split_ids(args.conversations),
        )


if __name__ == "__main__":
    main()
