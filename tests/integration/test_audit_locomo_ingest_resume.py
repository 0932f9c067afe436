"""Audit of the LoCoMo harness's writes, resume and errors, through spies on the public
scope API (what `remember` and `remember_many` were called with) and the CLI."""

from __future__ import annotations

import asyncio
import json
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from powercontext import ServerSettings, open_runtime
from powercontext.bench.locomo import RunConfig, run_locomo
from powercontext.bench.locomo.backends import (
    InProcessBackend,
    ScopeContentError,
    WriteMode,
    bench_settings,
)
from powercontext.cli import app as root_app
from powercontext.config import InferenceConfig
from powercontext.memory.models import RememberMemoryRequest, SearchMemoryRequest


def _turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


def _sample(sample_id: str) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("Ann", "D1:1", "I adopted a quokka."),
                _turn("Bob", "D1:2", "My violin lessons start soon."),
            ],
            # session 2 has no date at all; session 3's is not of the file's form
            "session_2": [_turn("Ann", "D2:1", "The quokka eats carrots.")],
            "session_3_date_time": "13:56 pm on 8 May, 2023",
            "session_3": [
                _turn("Bob", "D3:1", "I played the violin at the harbour."),
                _turn("Ann", "D3:2", "Lovely harbour."),
            ],
        },
        "qa": [
            {
                "question": "What did Ann adopt?",
                "answer": "a quokka",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where did Bob play?",
                "answer": "harbour",
                "evidence": ["D3:1"],
                "category": 2,
            },
        ],
    }


class Interrupted(Exception):
    """Stands for a run stopped mid-way (Ctrl-C, a crash): nothing in the harness catches it."""


class _Spy:
    """A scope's memory that records every write and search, and can fail after a budget."""

    def __init__(self, inner: Any, log: list[tuple[str, Any]], budget: dict[str, int]) -> None:
        self._inner, self._log, self._budget = inner, log, budget

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _spend(self, what: str) -> None:
        if self._budget.get(what, 1) <= 0:
            raise Interrupted(what)
        if what in self._budget:
            self._budget[what] -= 1

    async def remember(self, request: RememberMemoryRequest) -> Any:
        self._spend("remember")
        self._log.append(("remember", request))
        return await self._inner.remember(request)

    async def remember_many(self, requests: list[RememberMemoryRequest]) -> Any:
        self._log.append(("remember_many", list(requests)))
        return await self._inner.remember_many(requests)

    async def search(self, request: SearchMemoryRequest) -> Any:
        self._spend("search")
        self._log.append(("search", request.query))
        return await self._inner.search(request)


class _SpySource:
    def __init__(self, runtime: Any, budget: dict[str, int] | None = None) -> None:
        self._runtime = runtime
        self.log: list[tuple[str, Any]] = []
        self.budget = budget if budget is not None else {}
        self.memory = self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)

    def for_scope(self, scope_id: str) -> _Spy:
        return _Spy(self._runtime.memory.for_scope(scope_id), self.log, self.budget)


def _data(tmp_path: Path, *samples: dict[str, Any]) -> Path:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(list(samples)), encoding="utf-8")
    return path


async def _run(
    data: Path, out: Path, write: WriteMode = "turns", budget: dict[str, int] | None = None
) -> tuple[Any, _SpySource]:
    base = ServerSettings(inference=InferenceConfig(embedding_model="hash"))
    config = RunConfig(data=data, out=out, mode="fts", top_k=5, answer_k=2, write=write)
    await asyncio.to_thread(out.mkdir, parents=True, exist_ok=True)
    settings = bench_settings(base, rerank=False, top_k=5, database_path=out / "locomo.db")
    async with open_runtime(settings) as runtime:
        source = _SpySource(runtime, budget)
        outputs = await run_locomo(
            config, base_settings=base, backend=InProcessBackend(source), show_progress=False
        )
    return outputs, source


async def test_turns_writes_one_remember_per_turn_with_thread_and_session_date(
    tmp_path: Path,
) -> None:
    outputs, spy = await _run(_data(tmp_path, _sample("c1")), tmp_path / "out", "turns")
    writes = [(kind, request) for kind, request in spy.log if kind != "search"]
    assert [kind for kind, _ in writes] == ["remember"] * 5
    requests: list[RememberMemoryRequest] = [request for _, request in writes]
    assert [r.metadata["dia_id"] for r in requests] == ["D1:1", "D1:2", "D2:1", "D3:1", "D3:2"]
    assert [r.thread for r in requests] == ["c1/session-1"] * 2 + ["c1/session-2"] + [
        "c1/session-3"
    ] * 2
    may_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert [r.occurred_at for r in requests] == [may_8, may_8, None, None, None]
    assert requests[0].expected_revision == 0  # the compare-and-swap on an empty scope
    assert all(r.expected_revision is None for r in requests[1:])
    issues = outputs.results["dataset"]["issues"]["counts"]
    assert issues["session_without_date"] == 1 and issues["session_date_unparseable"] == 1


async def test_batch_writes_one_remember_many_per_conversation(tmp_path: Path) -> None:
    data = _data(tmp_path, _sample("c1"), _sample("c2"))
    outputs, spy = await _run(data, tmp_path / "out", "batch")
    writes = [(kind, request) for kind, request in spy.log if kind != "search"]
    assert [kind for kind, _ in writes] == ["remember_many", "remember_many"]
    for (_, batch), sample_id in zip(writes, ("c1", "c2"), strict=True):
        assert len(batch) == 5
        assert {r.thread for r in batch} == {f"{sample_id}/session-{n}" for n in (1, 2, 3)}
        assert batch[0].occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert {k: v["entries"] for k, v in outputs.results["ingest"].items()} == {"c1": 5, "c2": 5}


async def test_an_ingest_interrupted_between_turns_is_completed_on_resume(tmp_path: Path) -> None:
    data, out = _data(tmp_path, _sample("c1")), tmp_path / "out"
    with pytest.raises(Interrupted):
        await _run(data, out, budget={"remember": 2})
    outputs, spy = await _run(data, out)
    # The scope held the first two turns: the first write's compare-and-swap conflicts, and
    # the three others are written, none twice.
    written = [request.metadata["dia_id"] for kind, request in spy.log if kind == "remember"]
    assert written == ["D1:1", "D2:1", "D3:1", "D3:2"]
    clean, _ = await _run(data, tmp_path / "clean")
    assert outputs.results["retrieval"] == clean.results["retrieval"]
    base = ServerSettings(inference=InferenceConfig(embedding_model="hash"))
    settings = bench_settings(base, rerank=False, top_k=5, database_path=out / "locomo.db")
    async with open_runtime(settings) as runtime:
        scope = runtime.memory.for_scope(outputs.results["ingest"]["c1"]["scope_id"])
        assert len((await scope.list()).entries) == 5


async def test_a_run_interrupted_while_searching_resumes_without_scoring_twice(
    tmp_path: Path,
) -> None:
    data, out = _data(tmp_path, _sample("c1"), _sample("c2")), tmp_path / "out"
    with pytest.raises(Interrupted):
        await _run(data, out, budget={"search": 3})  # c1's two, then one of c2's
    outputs, spy = await _run(data, out)
    assert outputs.resumed == ["c1"]
    assert [q for kind, q in spy.log if kind == "search"] == [
        "What did Ann adopt?",
        "Where did Bob play?",
    ]
    assert outputs.results["dataset"]["questions"] == 4
    assert outputs.results["retrieval"]["scored_questions"] == 4
    assert outputs.results["latency"]["search_ms"]["n"] == 4
    assert outputs.results["ingest"]["c2"]["reused"] is True  # written before the interrupt


def _cli(tmp_path: Path, payload: Any, *extra: str) -> Any:
    data = tmp_path / "in.json"
    data.write_text(payload if isinstance(payload, str) else json.dumps(payload), "utf-8")
    args = ["bench", "locomo", "--data", str(data), "--out", str(tmp_path / "o"), "--no-progress"]
    env = {"POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash"}
    return CliRunner().invoke(root_app, [*args, *extra], env=env)


@pytest.mark.parametrize(
    ("payload", "code", "status", "words"),
    [
        ('{"a": 1}', "dataset_error", 1, "non-empty JSON list"),
        ("[]", "dataset_error", 1, "non-empty JSON list"),
        ("not json", "dataset_error", 1, "is not JSON"),
        ([{"foo": "bar"}], "dataset_error", 1, "no `conversation`"),
        ([{**_sample("c1"), "qa": []}], "dataset_error", 1, "no question to score"),
        (
            [{k: v for k, v in _sample("c1").items() if k != "qa"}],
            "dataset_error",
            1,
            "no question",
        ),
    ],
)
def test_bad_input_is_one_line_in_the_clis_error_format(
    tmp_path: Path, payload: Any, code: str, status: int, words: str
) -> None:
    result = _cli(tmp_path, payload)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == status, result.output
    assert len(lines) == 1 and lines[0].startswith(f"error {code}: "), result.stderr
    assert words in lines[0] and str(tmp_path / "in.json") in lines[0]


def test_option_and_configuration_errors_exit_2_with_a_code(tmp_path: Path) -> None:
    sample = _sample("c1")
    for extra, code in (
        (("--answer-k", "40"), "usage_error"),
        (("--conversation", "nope"), "usage_error"),
        (("--rerank", "llm"), "configuration_error"),
    ):
        result = _cli(tmp_path, [sample], *extra)
        assert result.exit_code == 2, result.output
        line = result.stderr.strip()
        assert "\n" not in line and line.startswith(f"error {code}: "), result.stderr


def test_an_unknown_category_is_left_out_and_said_so(tmp_path: Path) -> None:
    sample = _sample("c1")
    sample["qa"].append({"question": "Q?", "answer": "x", "evidence": ["D1:1"], "category": 7})
    result = _cli(tmp_path, [sample], "--mode", "fts")
    assert result.exit_code == 0, result.output
    assert "warning: qa items of the file left out: qa_unknown_category 1" in result.stderr
    results = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    assert results["dataset"]["questions"] == 2
    assert "qa_unknown_category" in (tmp_path / "o" / "report.md").read_text(encoding="utf-8")


async def test_a_run_with_nothing_scorable_for_retrieval_draws_its_chart_without_warnings(
    tmp_path: Path,
) -> None:
    sample = _sample("c1")
    sample["qa"] = [{"question": "Why?", "answer": "x", "evidence": [], "category": 3}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "No artists with labels" before
        outputs, _ = await _run(_data(tmp_path, sample), tmp_path / "out")
    assert outputs.results["retrieval"]["scored_questions"] == 0
    assert outputs.paths.chart is not None and outputs.paths.chart.exists()


async def test_a_scope_holding_other_writes_is_refused_not_reused(tmp_path: Path) -> None:
    data, out = _data(tmp_path, _sample("c1")), tmp_path / "out"
    first, _ = await _run(data, out)
    base = ServerSettings(inference=InferenceConfig(embedding_model="hash"))
    settings = bench_settings(base, rerank=False, top_k=5, database_path=out / "locomo.db")
    async with open_runtime(settings) as runtime:
        scope = runtime.memory.for_scope(first.results["ingest"]["c1"]["scope_id"])
        await scope.remember(RememberMemoryRequest(kind="turn", text="Eve: a foreign entry"))
    (out / "conversations" / "c1.json").unlink()  # the conversation is searched again
    with pytest.raises(ScopeContentError, match="writes other than"):
        await _run(data, out)
