"""The run loop: per conversation, ingest, search every question, optionally answer and judge.

Searches run one at a time so their latencies are not inflated by each other; answer and
judge calls (network-bound) run with bounded concurrency. Each finished conversation is
written to the run state at once, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from powercontext import ServerSettings
from powercontext.bench.locomo.answer import generate_answer
from powercontext.bench.locomo.backends import (
    MemoryBackend,
    WriteMode,
    bench_settings,
    open_in_process,
    open_sdk,
)
from powercontext.bench.locomo.dataset import (
    Conversation,
    Dataset,
    DatasetError,
    QAItem,
    load_dataset,
)
from powercontext.bench.locomo.generation import TextGenerator, default_generator
from powercontext.bench.locomo.ingest import Granularity, covered_dia_ids, plan_ingest
from powercontext.bench.locomo.judge import JudgePolicy, judge_answer
from powercontext.bench.locomo.metrics import score_answer
from powercontext.bench.locomo.report import ReportPaths, build_results, write_outputs
from powercontext.bench.locomo.state import RunState
from powercontext.memory.models import SearchMemoryRequest
from powercontext.memory.values import SearchMode

RerankSetting = Literal["none", "llm"]
DATABASE_FILE = "locomo.db"


@dataclass(frozen=True, slots=True)
class RunConfig:
    data: Path
    out: Path
    rerank: RerankSetting = "none"
    mode: SearchMode = "auto"
    top_k: int = 30
    """Coarse pool size: the rerank candidate limit, or the search limit without rerank."""
    answer_k: int = 10
    """Final hits: the search limit with rerank, or the pool's first answer_k without it."""
    granularity: Granularity = "turn"
    write: WriteMode = "turns"
    """`turns`: one `remember` per entry, as an agent writes; `batch`: one `remember_many`."""
    answer: bool = False
    judge: JudgePolicy = "none"
    server: str | None = None
    context_window: int = 1
    """Neighbouring turns added on each side of a hit when building the answer context."""
    conversations: tuple[str, ...] = ()
    """Only these sample ids (all when empty)."""
    answer_model: str | None = None
    judge_model: str | None = None
    concurrency: int = 4

    def validate(self) -> None:
        if not 1 <= self.top_k <= 100:
            raise ValueError("--top-k must be between 1 and 100 (the rerank candidate bound)")
        if not 1 <= self.answer_k <= self.top_k:
            raise ValueError("--answer-k must be between 1 and --top-k")
        if self.judge != "none" and not self.answer:
            raise ValueError("--judge needs --answer: there is nothing to judge otherwise")
        if self.context_window < 0 or self.concurrency < 1:
            raise ValueError("context window must be >= 0 and concurrency >= 1")

    def fingerprint(self) -> dict[str, Any]:
        """Everything that changes a conversation's records (not where they are written)."""
        values = asdict(self)
        for key in ("data", "out", "conversations", "concurrency"):
            values.pop(key)
        return values


@dataclass(slots=True)
class RunOutputs:
    results: dict[str, Any]
    paths: ReportPaths
    resumed: list[str] = field(default_factory=list)


@contextlib.asynccontextmanager
async def _open_backend(config: RunConfig, base: ServerSettings) -> AsyncIterator[MemoryBackend]:
    if config.server:
        async with open_sdk(config.server) as sdk:
            yield sdk
        return
    settings = bench_settings(
        base,
        rerank=config.rerank == "llm",
        top_k=config.top_k,
        database_path=config.out / DATABASE_FILE,
    )
    async with open_in_process(settings) as local:
        yield local


def _ranking(hits: Sequence[Any]) -> list[list[str]]:
    return [sorted(covered_dia_ids(dict(hit.metadata))) for hit in hits]


async def _search(
    backend: MemoryBackend, config: RunConfig, scope_id: str, qa: QAItem
) -> dict[str, Any]:
    reranked = config.rerank == "llm"
    request = SearchMemoryRequest(
        query=qa.question,
        limit=config.answer_k if reranked else config.top_k,
        mode=config.mode,
    )
    started = time.perf_counter()
    page = await backend.search(scope_id, request)
    latency_ms = (time.perf_counter() - started) * 1000
    hits = list(page.hits)
    trace = getattr(page, "rerank", None)
    rerank_info: dict[str, Any] | None = None
    coarse: list[list[str]] | None
    if not reranked:
        coarse, final = _ranking(hits), _ranking(hits[: config.answer_k])
    else:
        final = _ranking(hits)
        coarse = None
        if trace is not None and backend.trace_available:
            coarse = _ranking(trace.candidate_hits)
            rerank_info = {
                "latency_ms": trace.latency_ms,
                "requests": trace.usage.requests,
                "input_tokens": trace.usage.input_tokens,
                "output_tokens": trace.usage.output_tokens,
                "selected_ranks": list(trace.selected_ranks),
                "discarded_rank_count": trace.discarded_rank_count,
                "used_fallback": trace.used_fallback,
            }
        elif not hits and backend.trace_available:
            coarse = []  # nothing was admitted, so nothing was reranked: an empty pool
    return {
        "qa_index": qa.index,
        "category": qa.category,
        "question": qa.question,
        "answer": qa.answer,
        "evidence": list(qa.evidence),
        "unresolved_evidence": list(qa.unresolved_evidence),
        "mode": getattr(page, "mode", None),
        "latency_ms": latency_ms,
        "coarse": coarse,
        "final": final,
        "rerank": rerank_info,
    }


async def _answer_and_judge(
    record: dict[str, Any],
    conversation: Conversation,
    config: RunConfig,
    answerer: TextGenerator,
    judge: TextGenerator | None,
    gate: asyncio.Semaphore,
) -> None:
    async with gate:
        hits = [{"dia_ids": ids} for ids in record["final"]]
        prediction = await generate_answer(
            answerer, conversation, record["question"], hits, config.context_window
        )
        record["prediction"] = prediction
        category = record["category"]
        # A category 1-4 item without a gold answer cannot be scored, by overlap or by a judge
        # (the judge would be told the right answer is to abstain): it stays unscored.
        if category != 5 and record["answer"] is None:
            return
        record["answer_scores"] = score_answer(prediction, record["answer"], category).as_dict()
        if judge is not None:
            verdict = await judge_answer(
                judge, config.judge, record["question"], record["answer"], prediction, category
            )
            record["judge"] = {"policy": config.judge, "correct": verdict}


def _select(dataset: Dataset, wanted: Sequence[str]) -> list[Conversation]:
    if not wanted:
        return list(dataset.conversations)
    known = {c.sample_id: c for c in dataset.conversations}
    missing = [sample_id for sample_id in wanted if sample_id not in known]
    if missing:
        raise ValueError(f"unknown sample ids: {', '.join(missing)}; the file has {sorted(known)}")
    return [known[sample_id] for sample_id in wanted]


DROPPED_QA = ("qa_without_question", "qa_unknown_category")
"""Issues whose qa items are not in the run at all (every other quirk is scored or counted)."""


def _dropped(dataset: Dataset, conversations: Sequence[Conversation]) -> str:
    counts = dataset.issues_for(c.sample_id for c in conversations).counts
    dropped = [f"{kind} {counts[kind]}" for kind in DROPPED_QA if counts[kind]]
    return f" (qa items left out: {', '.join(dropped)})" if dropped else ""


def _progress(enabled: bool) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=not enabled,
    )


async def run_locomo(
    config: RunConfig,
    *,
    base_settings: ServerSettings | None = None,
    answer_generator: TextGenerator | None = None,
    judge_generator: TextGenerator | None = None,
    show_progress: bool = True,
    backend: MemoryBackend | None = None,
) -> RunOutputs:
    """Run (or resume) one LoCoMo evaluation and write results.json, report.md and the chart.

    `base_settings` defaults to the environment; the harness only sets the two rerank knobs
    and points the database at a file in `config.out`. `backend` is an already-open
    backend (a custom transport); the caller then owns its rerank configuration.
    """
    config.validate()
    dataset = load_dataset(config.data)
    conversations = _select(dataset, config.conversations)
    if not any(conversation.qa for conversation in conversations):
        # A run over nothing would write n/a everywhere and exit 0, as if it had measured.
        raise DatasetError(
            f"{dataset.source}: the selected conversations hold no question to score"
            f"{_dropped(dataset, conversations)}"
        )
    base = base_settings if base_settings is not None else ServerSettings()
    answerer = judge = None
    if config.answer:
        answerer = answer_generator or default_generator(config.answer_model, base.inference)
        if config.judge != "none":
            judge = judge_generator or default_generator(
                config.judge_model or config.answer_model, base.inference
            )
    config.out.mkdir(parents=True, exist_ok=True)
    payloads: dict[str, dict[str, Any]] = {}
    resumed: list[str] = []
    opened = contextlib.nullcontext(backend) if backend else _open_backend(config, base)
    async with opened as backend:
        environment = backend.describe()
        state = RunState(
            config.out,
            {"config": config.fingerprint(), "dataset": dataset.sha256, "backend": environment},
        ).open()
        gate = asyncio.Semaphore(config.concurrency)
        with _progress(show_progress) as progress:
            total = sum(len(c.qa) for c in conversations)
            task = progress.add_task("LoCoMo", total=total)
            for conversation in conversations:
                if state.is_done(conversation.sample_id):
                    payloads[conversation.sample_id] = state.load(conversation.sample_id)
                    resumed.append(conversation.sample_id)
                    progress.advance(task, len(conversation.qa))
                    continue
                progress.update(task, description=f"{conversation.sample_id} ingest")
                plan = plan_ingest(conversation, config.granularity)
                outcome = await backend.ingest(plan.scope_id, plan.requests, config.write)
                progress.update(task, description=f"{conversation.sample_id} search")
                records = []
                for qa in conversation.qa:
                    records.append(await _search(backend, config, plan.scope_id, qa))
                    if answerer is None:
                        progress.advance(task)
                if answerer is not None:
                    progress.update(task, description=f"{conversation.sample_id} answer")

                    async def one(record: dict[str, Any], c: Conversation = conversation) -> None:
                        await _answer_and_judge(record, c, config, answerer, judge, gate)
                        progress.advance(task)

                    await asyncio.gather(*(one(record) for record in records))
                payload = {
                    "sample_id": conversation.sample_id,
                    "ingest": {**asdict(outcome), "session_chunks": plan.session_chunks},
                    "records": records,
                }
                state.record(conversation.sample_id, payload)
                payloads[conversation.sample_id] = payload
    results = build_results(
        config={**asdict(config), "data": str(config.data), "out": str(config.out)},
        dataset=dataset,
        conversations=[payloads[c.sample_id] for c in conversations],
        environment=environment,
        coarse_observable=config.rerank == "none" or backend.trace_available,
    )
    return RunOutputs(results=results, paths=write_outputs(results, config.out), resumed=resumed)
