"""The LoCoMo harness end to end, in-process on a real SQLite file, on a tiny fixture."""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import uvicorn
from typer.testing import CliRunner

from powercontext import ServerSettings, open_runtime
from powercontext.bench.locomo import RunConfig, run_locomo
from powercontext.bench.locomo.backends import SdkBackend
from powercontext.bench.locomo.cli import app
from powercontext.bench.locomo.dataset import load_dataset
from powercontext.bench.locomo.ingest import plan_ingest
from powercontext.bench.locomo.state import RunStateError
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig
from powercontext.memory.errors import ConfigurationError
from powercontext.server import create_app

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "tiny.json"


def _settings(embedding_model: str = "none", generation_model: str | None = None) -> ServerSettings:
    return ServerSettings(
        inference=InferenceConfig(
            embedding_model=embedding_model, generation_model=generation_model
        )
    )


def _config(out: Path, **overrides: object) -> RunConfig:
    values: dict[str, object] = {"mode": "fts", "top_k": 5, "answer_k": 2}
    values.update(overrides)
    return RunConfig(data=FIXTURE, out=out, **values)  # type: ignore[arg-type]


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def _records(out: Path) -> list[dict[str, object]]:
    records = []
    for path in sorted((out / "conversations").glob("*.json")):
        records += json.loads(path.read_text())["records"]
    return records


async def test_fts_retrieval_run_writes_sane_outputs(tmp_path: Path) -> None:
    outputs = await run_locomo(_config(tmp_path), base_settings=_settings(), show_progress=False)
    results = json.loads(outputs.paths.results.read_text())
    assert results == json.loads(json.dumps(outputs.results))
    assert results["dataset"]["questions"] == 12
    # conv-a qa[5] ("D"), qa[6] (none) and qa[3], whose "D9:9" names no turn: unscorable
    assert results["dataset"]["questions_without_evidence"] == 3
    assert results["dataset"]["questions_with_unresolved_evidence"] == 1
    assert results["modes"] == {"fts": 12}
    retrieval = results["retrieval"]
    assert retrieval["cutoffs"] == [5]
    assert retrieval["scored_questions"] == 9
    coarse = retrieval["coarse"]["by_category"]
    final = retrieval["final"]["by_category"]
    assert coarse["overall"]["n"] == 7  # 9 scored, minus the 2 adversarial ones
    for group, scores in final.items():
        assert 0.0 <= scores["recall@2"] <= scores["recall@5"] <= 1.0, group
        # the final hits are the pool's first answer-k: never more recall than the pool
        assert scores["recall@2"] <= coarse[group]["recall@5"] + 1e-9, group
    assert final["overall"]["recall@2"] > 0.0
    assert results["latency"]["search_ms"]["n"] == 12
    assert results["final_hits"]["overall"]["hits"] <= 2

    by_question = {r["question"]: r for r in _records(tmp_path)}
    lisbon = by_question["Which city did Chen book a trip to?"]
    assert "D2:1" in lisbon["final"][0]  # the only turn naming the booked trip
    assert all(len(r["final"]) <= 2 and len(r["coarse"]) <= 5 for r in by_question.values())

    report = outputs.paths.report.read_text()
    assert "Maharana" in report and "CC BY-NC 4.0" in report
    assert "label the same numbers differently" in report
    assert "| overall | 7 |" in report
    assert "evidence_split" in report
    assert outputs.paths.chart is not None
    width, height = _png_size(outputs.paths.chart)
    assert width > 600 and height > 200


async def test_a_run_without_matplotlib_writes_its_report_and_says_how_to_get_the_chart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what a missing package looks like
    outputs = await run_locomo(_config(tmp_path), base_settings=_settings(), show_progress=False)
    assert outputs.paths.chart is None and not (tmp_path / "recall.png").exists()
    report = outputs.paths.report.read_text()
    assert "| overall | 7 |" in report
    assert "powercontext-memory[charts]" in report and "recall.png" not in report


async def test_a_run_resumes_per_conversation(tmp_path: Path) -> None:
    first = await run_locomo(_config(tmp_path), base_settings=_settings(), show_progress=False)
    assert first.resumed == []
    again = await run_locomo(_config(tmp_path), base_settings=_settings(), show_progress=False)
    assert again.resumed == ["conv-a", "conv-b"]
    assert again.results["retrieval"] == first.results["retrieval"]

    # Lose one conversation's record: it is searched again, against the scope it already wrote.
    (tmp_path / "conversations" / "conv-b.json").unlink()
    third = await run_locomo(_config(tmp_path), base_settings=_settings(), show_progress=False)
    assert third.resumed == ["conv-a"]
    assert third.results["ingest"]["conv-b"]["reused"] is True
    assert third.results["ingest"]["conv-a"]["reused"] is False  # as recorded the first time
    assert third.results["retrieval"] == first.results["retrieval"]

    with pytest.raises(RunStateError, match=r"different settings \(.*config\.top_k\)"):
        await run_locomo(_config(tmp_path, top_k=4), base_settings=_settings(), show_progress=False)


async def test_session_granularity_covers_evidence_by_session(tmp_path: Path) -> None:
    outputs = await run_locomo(
        _config(tmp_path, granularity="session", top_k=2, answer_k=1),
        base_settings=_settings(),
        show_progress=False,
    )
    assert {payload["entries"] for payload in outputs.results["ingest"].values()} == {2}
    records = _records(tmp_path)
    assert all(len(hit) == 3 for r in records for hit in r["final"])  # 3 turns per session
    lisbon = next(r for r in records if r["question"] == "Which city did Chen book a trip to?")
    assert lisbon["final"] == [["D2:1", "D2:2", "D2:3"]]  # session 2 covers the evidence D2:1
    retrieval = outputs.results["retrieval"]
    coarse, final = retrieval["coarse"]["by_category"], retrieval["final"]["by_category"]
    assert final["overall"]["recall@1"] <= coarse["overall"]["recall@2"] <= 1.0


class ExtractiveModel:
    """Answers with the last excerpt line's words after the speaker; judges by word overlap."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, system: str, prompt: str) -> str:
        self.calls += 1
        if "Verdict" in prompt:
            fields = dict(line.split(": ", 1) for line in prompt.splitlines() if ": " in line)
            reference = fields["Reference answer"].lower().split()
            candidate = fields["Candidate answer"].lower()
            return "CORRECT" if any(word in candidate for word in reference) else "WRONG"
        excerpt = prompt.split("\n\nQuestion:")[0].splitlines()[-1]
        return "Answer: " + excerpt.split(": ", 1)[-1]


async def test_answers_and_judge_through_the_injected_generator(tmp_path: Path) -> None:
    model = ExtractiveModel()
    outputs = await run_locomo(
        _config(tmp_path, answer=True, judge="strict", context_window=0, concurrency=2),
        base_settings=_settings(),
        answer_generator=model,
        judge_generator=model,
        show_progress=False,
    )
    assert model.calls == 24  # one answer and one verdict per question
    records = _records(tmp_path)
    assert all(r["judge"]["policy"] == "strict" for r in records)
    for record in records:
        assert isinstance(record["prediction"], str)
        if record["category"] == 5:
            # the extractive model never abstains, so it fails every adversarial item
            assert record["answer_scores"]["f1"] == 0.0
    answers = outputs.results["answers"]
    assert set(answers["deterministic"]["overall"]) == {"n", "exact_match", "f1", "bleu1"}
    assert answers["judge"]["policy"] == "strict"
    assert answers["judge"]["invalid_verdicts"] == 0
    report = outputs.paths.report.read_text()
    assert "LLM judge accuracy (strict policy)" in report


async def test_rerank_llm_scores_the_trace_pool_and_the_selection(tmp_path: Path) -> None:
    # pydantic-ai's offline `test` model: a real reranker run with schema-valid, dumb output.
    outputs = await run_locomo(
        _config(tmp_path, rerank="llm"),
        base_settings=_settings(generation_model="test"),
        show_progress=False,
    )
    retrieval = outputs.results["retrieval"]
    assert retrieval["coarse"]["available"] is True
    assert outputs.results["environment"]["runtime"]["memory_rerank_enabled"] is True
    assert outputs.results["environment"]["runtime"]["memory_rerank_candidate_limit"] == 5
    records = _records(tmp_path)
    reranked = [r for r in records if r["rerank"]]
    assert reranked, "every non-empty pool goes through the reranker"
    for record in reranked:
        assert len(record["final"]) <= 2
        ranks = record["rerank"]["selected_ranks"]
        # the final hits are exactly the pool entries at the selected ranks, in that order
        assert record["final"] == [record["coarse"][rank - 1] for rank in ranks]
    assert outputs.results["latency"]["rerank_ms"]["n"] == len(reranked)


@contextmanager
def _serving(settings: ServerSettings) -> Iterator[str]:
    """A real PowerContext server (uvicorn) on an ephemeral loopback port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), log_config=None, access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


async def test_over_http_the_sdk_run_matches_the_in_process_run(tmp_path: Path) -> None:
    local = await run_locomo(
        _config(tmp_path / "local"), base_settings=_settings(), show_progress=False
    )
    served = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'server.db'}"),
        inference=InferenceConfig(embedding_model="none"),
    )
    with _serving(served) as url:
        remote = await run_locomo(_config(tmp_path / "remote", server=url), show_progress=False)
        resumed = await run_locomo(
            _config(tmp_path / "remote-again", server=url), show_progress=False
        )
    assert remote.results["environment"] == {"backend": "sdk", "server": url}
    assert remote.results["retrieval"] == local.results["retrieval"]
    assert remote.results["modes"] == {"fts": 12}
    # a second run against the same server finds each conversation's scope already written
    assert {i["reused"] for i in resumed.results["ingest"].values()} == {True}
    assert resumed.results["retrieval"] == local.results["retrieval"]


async def test_over_the_sdk_shape_a_reranked_pool_is_reported_unavailable(tmp_path: Path) -> None:
    # The SDK backend drives any client with the `memory.for_scope(s)` shape; a real runtime
    # has it. Over HTTP there is no rerank trace, so the coarse pool must not be scored.
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'server.db'}"),
        inference=InferenceConfig(embedding_model="none", generation_model="test"),
        runtime=RuntimeConfig(memory_rerank_enabled=True, memory_rerank_candidate_limit=5),
    )
    async with open_runtime(settings) as runtime:
        outputs = await run_locomo(
            _config(tmp_path / "out", rerank="llm"),
            backend=SdkBackend(runtime, "http://127.0.0.1:1"),
            show_progress=False,
        )
        plan = plan_ingest(load_dataset(FIXTURE).conversations[0], "turn")
        assert plan.scope_id == outputs.results["ingest"]["conv-a"]["scope_id"]
        again = await SdkBackend(runtime, "x").ingest(plan.scope_id, plan.requests)
    retrieval = outputs.results["retrieval"]
    assert retrieval["coarse"]["available"] is False
    assert retrieval["coarse"]["by_category"] is None
    assert retrieval["final"]["by_category"]["overall"]["n"] == 7
    assert outputs.results["environment"] == {"backend": "sdk", "server": "http://127.0.0.1:1"}
    assert "Unavailable: the rerank trace" in outputs.paths.report.read_text()
    assert again.reused is True


async def test_rerank_llm_without_a_generation_model_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL"):
        await run_locomo(
            _config(tmp_path, rerank="llm"), base_settings=_settings(), show_progress=False
        )


def test_cli_refuses_inconsistent_options(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["--data", str(FIXTURE), "--judge", "strict", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "--judge needs --answer" in result.output
    result = runner.invoke(app, ["--data", str(FIXTURE), "--answer-k", "40"])
    assert result.exit_code == 2
    assert "--answer-k" in result.output


def test_run_config_fingerprint_ignores_where_it_writes(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert config.fingerprint() == replace(config, out=tmp_path / "elsewhere").fingerprint()
    assert config.fingerprint() != replace(config, mode="hybrid").fingerprint()
