"""`powercontext bench locomo`: mount `app` under the `bench` group (it holds one command)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from powercontext.bench.locomo.backends import (
    BackendUnavailableError,
    ScopeContentError,
    WriteMode,
)
from powercontext.bench.locomo.chart import CHART_HINT
from powercontext.bench.locomo.dataset import DatasetError
from powercontext.bench.locomo.generation import GenerationUnavailableError
from powercontext.bench.locomo.ingest import Granularity
from powercontext.bench.locomo.judge import JudgePolicy
from powercontext.bench.locomo.runner import DROPPED_QA, RerankSetting, RunConfig, run_locomo
from powercontext.bench.locomo.state import RunStateError
from powercontext.cli.errors import EXIT_CONFIGURATION, EXIT_FAILURE
from powercontext.cli.output import print_error
from powercontext.memory.errors import ConfigurationError, PowerContextError
from powercontext.memory.values import SearchMode

app = typer.Typer(help="Benchmarks driven through PowerContext's public interfaces.")


def _error_code(exc: Exception) -> tuple[str, int]:
    """The code and exit status of the rest of the CLI (cli/errors.py): 2 for what the
    options or the configuration get wrong, 1 for a bad input file or a failed run."""
    if isinstance(exc, DatasetError):
        unreadable = isinstance(exc.__cause__, OSError)
        return ("file_error" if unreadable else "dataset_error"), EXIT_FAILURE
    if isinstance(exc, PowerContextError):
        status = EXIT_CONFIGURATION if isinstance(exc, ConfigurationError) else EXIT_FAILURE
        return exc.code, status
    if isinstance(exc, BackendUnavailableError | GenerationUnavailableError):
        return "configuration_error", EXIT_CONFIGURATION
    if isinstance(exc, RunStateError | ScopeContentError):
        return "run_state_conflict", EXIT_FAILURE
    return "usage_error", EXIT_CONFIGURATION  # RunConfig.validate, an unknown --conversation


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@app.command("locomo")
def locomo_command(
    data: Annotated[
        Path, typer.Option(help="LoCoMo JSON file (the official locomo10.json format).")
    ],
    rerank: Annotated[RerankSetting, typer.Option(help="Runtime rerank setting.")] = "none",
    mode: Annotated[SearchMode, typer.Option(help="Search mode of every query.")] = "auto",
    top_k: Annotated[int, typer.Option(help="Coarse pool size (rerank candidate limit).")] = 30,
    answer_k: Annotated[int, typer.Option(help="Final hits per question.")] = 10,
    granularity: Annotated[
        Granularity, typer.Option(help="One entry per turn or per session.")
    ] = "turn",
    write: Annotated[
        WriteMode,
        typer.Option(help="One remember per entry (as agents write) or one remember_many."),
    ] = "turns",
    answer: Annotated[bool, typer.Option(help="Generate answers (needs a model).")] = False,
    judge: Annotated[JudgePolicy, typer.Option(help="LLM-judge policy for answers.")] = "none",
    server: Annotated[
        str | None, typer.Option(help="Run against a server through the SDK (URL).")
    ] = None,
    out: Annotated[Path, typer.Option(help="Output and resume directory.")] = Path(
        "locomo-results"
    ),
    conversation: Annotated[
        list[str] | None, typer.Option(help="Only this sample id (repeatable).")
    ] = None,
    context_window: Annotated[
        int, typer.Option(help="Neighbouring turns added around each hit for answers.")
    ] = 1,
    answer_model: Annotated[
        str | None, typer.Option(help="Answer model (default: the generation model).")
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option(help="Judge model (default: the answer model).")
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Parallel answer/judge calls.")] = 4,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Evaluate Memory search on LoCoMo: coarse pool and final hits measured separately."""
    config = RunConfig(
        data=data,
        out=out,
        rerank=rerank,
        mode=mode,
        top_k=top_k,
        answer_k=answer_k,
        granularity=granularity,
        write=write,
        answer=answer,
        judge=judge,
        server=server,
        context_window=context_window,
        conversations=tuple(conversation or ()),
        answer_model=answer_model,
        judge_model=judge_model,
        concurrency=concurrency,
    )
    try:
        outputs = asyncio.run(run_locomo(config, show_progress=progress))
    except (
        ValueError,
        BackendUnavailableError,
        RunStateError,
        ScopeContentError,
        GenerationUnavailableError,
        PowerContextError,
    ) as exc:
        code, status = _error_code(exc)
        print_error(code, str(exc))
        raise typer.Exit(code=status) from exc
    retrieval = outputs.results["retrieval"]
    pool, final_k = top_k, answer_k
    final = retrieval["final"]["by_category"].get("overall", {})
    coarse = (retrieval["coarse"]["by_category"] or {}).get("overall", {})
    typer.echo(
        "categories 1-4: "
        f"coarse pool R@{pool} {_fmt(coarse.get(f'recall@{pool}'))}, "
        f"final R@{final_k} {_fmt(final.get(f'recall@{final_k}'))}, "
        f"final MRR {_fmt(final.get(f'mrr@{final_k}'))}"
    )
    counts = outputs.results["dataset"]["issues"]["counts"]
    dropped = [f"{kind} {counts[kind]}" for kind in DROPPED_QA if counts.get(kind)]
    if dropped:
        # Counted in the report too; said here so a summary line is never read as all of it.
        typer.echo(f"warning: qa items of the file left out: {', '.join(dropped)}", err=True)
    if outputs.resumed:
        typer.echo(f"resumed: {', '.join(outputs.resumed)}")
    paths = outputs.paths
    typer.echo(f"wrote {paths.results}, {paths.report}, {paths.chart or CHART_HINT}")
