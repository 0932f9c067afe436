"""Audit of the LoCoMo harness's retrieval scoring against hand-computed figures.

A synthetic conversation in the official format, searched in fts mode with the search
features that blur which turns match switched off (feedback, neighbour context, participant
boost), so every pool below is fixed by term counts alone. A reranker picks known dia ids, so
the final selection is known too, including sparse ones (fewer hits than answer-k).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from powercontext import ServerSettings, open_runtime
from powercontext.bench.locomo import RunConfig, run_locomo
from powercontext.bench.locomo.backends import InProcessBackend, bench_settings
from powercontext.config import InferenceConfig, RuntimeConfig
from powercontext.memory.models import MemoryHit, MemoryRerankDecision


def _turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


SAMPLE: dict[str, Any] = {
    "sample_id": "syn-1",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            _turn("Ann", "D1:1", "quokka quokka quokka near the pier"),
            _turn("Bob", "D1:2", "quokka quokka spotted at dawn"),
            _turn("Ann", "D1:3", "one quokka with a violin"),
            _turn("Bob", "D1:4", "my cello case broke"),
        ],
        "session_2_date_time": "10:05 am on 3 June, 2023",
        "session_2": [
            _turn("Ann", "D2:1", "violin violin recital went well"),
            _turn("Bob", "D2:2", "tulip garden opened"),
            _turn("Ann", "D2:3", "bought tulip bulbs"),
        ],
    },
    "qa": [
        {"question": "quokka?", "answer": "x", "evidence": ["D1:3"], "category": 4},
        # multi-evidence: D2:2 never matches "violin", so the pool covers half of it
        {"question": "violin?", "answer": "x", "evidence": ["D2:1", "D2:2"], "category": 1},
        # evidence missing from the file: unscorable, neither a hit nor a miss
        {"question": "tulip?", "answer": "x", "evidence": ["D2:3", "D9:9"], "category": 2},
        {"question": "cello?", "answer": "x", "evidence": [], "category": 3},
        {
            "question": "pier quokka?",
            "adversarial_answer": "x",
            "evidence": ["D1:1"],
            "category": 5,
        },
    ],
}

# Pools by BM25 term counts (equal lengths): quokka x3 > x2 > x1.
POOLS = {
    "quokka?": [["D1:1"], ["D1:2"], ["D1:3"]],
    "violin?": [["D2:1"], ["D1:3"]],
    "pier quokka?": [["D1:1"], ["D1:2"], ["D1:3"]],
}
PICKS = {"quokka?": ["D1:3"], "violin?": ["D1:3"], "pier quokka?": ["D1:2", "D1:1"]}


class DiaIdPicker:
    """Selects the candidates holding the dia ids of PICKS, in that order; records each pool."""

    policy_id = "tests.audit.dia-id-picker.v1"

    def __init__(self) -> None:
        self.pools: dict[str, list[str]] = {}

    async def rerank(
        self, query: str, candidates: tuple[MemoryHit, ...], limit: int
    ) -> MemoryRerankDecision:
        ids = [str(hit.metadata["dia_id"]) for hit in candidates]
        self.pools[query] = ids
        ranks = tuple(ids.index(d) + 1 for d in PICKS.get(query, []) if d in ids)
        return MemoryRerankDecision(selected_ranks=ranks or (1,))


def _base() -> ServerSettings:
    runtime = RuntimeConfig(
        search_feedback_docs=0,
        index_context_fts=False,
        index_context_vector=False,
        search_participant_boost=0.0,
    )
    return ServerSettings(runtime=runtime, inference=InferenceConfig(embedding_model="hash"))


async def _run(tmp_path: Path, *, rerank: bool) -> tuple[dict[str, Any], str, DiaIdPicker]:
    data = tmp_path / "syn.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    config = RunConfig(
        data=data, out=out, rerank="llm" if rerank else "none", mode="fts", top_k=6, answer_k=2
    )
    base = _base()
    settings = bench_settings(base, rerank=rerank, top_k=6, database_path=out / "locomo.db")
    picker = DiaIdPicker()
    async with open_runtime(settings, memory_reranker=picker if rerank else None) as runtime:
        outputs = await run_locomo(
            config, base_settings=base, backend=InProcessBackend(runtime), show_progress=False
        )
    results = json.loads(outputs.paths.results.read_text(encoding="utf-8"))
    return results, outputs.paths.report.read_text(encoding="utf-8"), picker


def _records(out: Path) -> dict[str, dict[str, Any]]:
    payload = json.loads((out / "conversations" / "syn-1.json").read_text(encoding="utf-8"))
    return {r["question"]: r for r in payload["records"]}


def _markdown_table(report: str, heading: str) -> dict[str, dict[str, str]]:
    section = report.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    table = {}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        table[cells[0]] = dict(zip(header[1:], cells[1:], strict=True))
    return table


def _agrees(table: dict[str, dict[str, str]], by_category: dict[str, dict[str, float]]) -> None:
    assert list(table) == list(by_category)
    for group, cells in table.items():
        for column, cell in cells.items():
            key = "n" if column == "n" else re.sub(r"^R@", "recall@", column).lower()
            value = by_category[group][key]
            assert cell == (str(int(value)) if key == "n" else f"{value:.3f}"), (group, column)


async def test_coarse_pool_and_a_sparse_reranked_selection_are_scored_apart(
    tmp_path: Path,
) -> None:
    results, report, picker = await _run(tmp_path, rerank=True)
    records = _records(tmp_path / "out")
    # What the harness calls the coarse pool is exactly what the reranker was shown.
    for question, ids in picker.pools.items():
        assert records[question]["coarse"] == [[i] for i in ids], question
    for question, pool in POOLS.items():
        assert records[question]["coarse"] == pool, question
        assert records[question]["final"] == [[i] for i in PICKS[question]], question
    assert records["tulip?"]["evidence"] == [] and records["tulip?"]["unresolved_evidence"]

    retrieval = results["retrieval"]
    assert retrieval["cutoffs"] == [5, 6] and retrieval["scored_questions"] == 3
    coarse, final = retrieval["coarse"]["by_category"], retrieval["final"]["by_category"]
    assert list(coarse) == ["overall", "multi-hop", "single-hop", "adversarial"]
    # by hand: quokka? D1:3 at rank 3 -> R 1, MRR 1/3; violin? D2:1 at rank 1 -> R 1/2, MRR 1
    assert coarse["single-hop"] == pytest.approx(
        {
            "n": 1,
            "recall@5": 1,
            "recall@6": 1,
            "hit@5": 1,
            "hit@6": 1,
            "mrr@5": 1 / 3,
            "mrr@6": 1 / 3,
        }
    )
    assert coarse["multi-hop"]["recall@5"] == pytest.approx(0.5)
    assert coarse["multi-hop"]["mrr@5"] == pytest.approx(1.0)
    assert coarse["overall"]["n"] == 2
    assert coarse["overall"]["recall@5"] == pytest.approx(0.75)
    assert coarse["overall"]["mrr@6"] == pytest.approx(2 / 3)
    assert coarse["adversarial"]["mrr@6"] == pytest.approx(1.0)
    # final, one hit each for quokka? (the evidence) and violin? (a miss): sparse, never padded
    assert final["single-hop"]["recall@2"] == 1.0 and final["single-hop"]["mrr@2"] == 1.0
    assert final["multi-hop"]["recall@2"] == 0.0 and final["multi-hop"]["hit@2"] == 0.0
    assert final["overall"]["recall@2"] == pytest.approx(0.5)
    assert final["overall"]["mrr@2"] == pytest.approx(0.5)
    assert final["adversarial"]["recall@2"] == 1.0
    assert final["adversarial"]["mrr@2"] == pytest.approx(0.5)  # D1:1 picked second
    assert category_not_averaged(final)
    assert results["final_hits"]["overall"]["hits"] == pytest.approx(1.0)  # four 1-hit pages

    _agrees(_markdown_table(report, "Evidence retrieval: coarse pool"), coarse)
    _agrees(_markdown_table(report, "Evidence retrieval: final hits"), final)
    assert "scored for retrieval: 3" in report
    assert "Mean final hits (categories 1-4): 1.00" in report


def category_not_averaged(by_category: dict[str, dict[str, float]]) -> bool:
    """`overall` is categories 1-4: the adversarial row must not have moved it."""
    scored = [by_category["single-hop"]["recall@2"], by_category["multi-hop"]["recall@2"]]
    return by_category["overall"]["recall@2"] == pytest.approx(sum(scored) / len(scored))


async def test_without_rerank_the_final_hits_are_the_pools_first_answer_k(tmp_path: Path) -> None:
    results, report, _ = await _run(tmp_path, rerank=False)
    records = _records(tmp_path / "out")
    for question, pool in POOLS.items():
        assert records[question]["coarse"] == pool
        assert records[question]["final"] == pool[:2]
    final = results["retrieval"]["final"]["by_category"]
    # quokka? D1:3 is third: outside the final two; violin? D2:1 first
    assert final["single-hop"]["recall@2"] == 0.0 and final["single-hop"]["mrr@2"] == 0.0
    assert final["multi-hop"]["recall@2"] == pytest.approx(0.5)
    assert final["overall"]["mrr@2"] == pytest.approx(0.5)
    assert results["dataset"]["questions_by_category"] == {
        "adversarial": 1,
        "multi-hop": 1,
        "open-domain": 1,
        "single-hop": 1,
        "temporal": 1,
    }
    _agrees(_markdown_table(report, "Evidence retrieval: final hits"), final)
