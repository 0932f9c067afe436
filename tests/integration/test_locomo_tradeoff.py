"""The candidate-limit trade-off on the tiny LoCoMo fixture: recall per policy, prompt sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext import ServerSettings
from powercontext.bench.locomo.tradeoff import (
    main,
    measure_tradeoff,
    on_or_above_curve,
    prompt_chars,
)
from powercontext.bench.locomo.tradeoff_report import BY_CLASS
from powercontext.config import InferenceConfig
from powercontext.memory.models import MemoryHit, MemoryRef
from powercontext.memory.rerank.listwise import LISTWISE_INSTRUCTIONS

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo" / "tiny.json"


def _hit(text: str) -> MemoryHit:
    return MemoryHit(
        memory_ref=MemoryRef(scope_id="s", revision=1),
        entry_id="e",
        entry_version_id="v",
        kind="turn",
        text=text,
        metadata={},
        score=1.0,
        matched_by=("fts",),
    )


def test_prompt_size_counts_instructions_and_every_candidate() -> None:
    one = prompt_chars("when?", [_hit("a" * 40)], 10, 1200)
    two = prompt_chars("when?", [_hit("a" * 40), _hit("b" * 40)], 10, 1200)
    assert one > len(LISTWISE_INSTRUCTIONS) + 40
    assert two - one >= 40
    assert prompt_chars("when?", [], 10, 1200) == 0


def test_curve_check_interpolates_between_fixed_points() -> None:
    fixed = [(1000.0, 0.5), (2000.0, 0.7)]
    assert on_or_above_curve(fixed, (1500.0, 0.6))
    assert not on_or_above_curve(fixed, (1500.0, 0.59))
    assert on_or_above_curve(fixed, (500.0, 0.5)) and not on_or_above_curve(fixed, (3000, 0.6))


async def test_tradeoff_scores_every_policy_per_category(tmp_path: Path) -> None:
    settings = ServerSettings(inference=InferenceConfig(embedding_model="none"))
    results = await measure_tradeoff(FIXTURE, tmp_path, mode="fts", base_settings=settings)
    policies = results["policies"]
    fixed = ["fixed-10", "fixed-20", "fixed-30", "fixed-40", "fixed-50"]
    assert list(policies) == [*fixed, BY_CLASS]
    overall = [policies[p]["overall"] for p in fixed]
    # A deeper pool never loses evidence and never makes the prompt shorter.
    recalls = [o["pool_recall"] for o in overall]
    sizes = [o["prompt_chars"] for o in overall]
    assert recalls == sorted(recalls) and sizes == sorted(sizes)
    assert 0 < recalls[-1] <= 1
    assert sum(sum(c.values()) for c in results["query_classes"].values()) == int(
        policies[BY_CLASS]["overall"]["n"]
    ) + int(policies[BY_CLASS].get("adversarial", {"n": 0})["n"])


def test_cli_writes_json_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL", "none")
    main(["--data", str(FIXTURE), "--out", str(tmp_path), "--mode", "fts"])
    written = json.loads((tmp_path / "tradeoff.json").read_text(encoding="utf-8"))
    assert written["candidate_policy"] == "powercontext.memory.candidates.by_class.v2"
    assert "| by_class |" in (tmp_path / "tradeoff.md").read_text(encoding="utf-8")


async def test_tokens_come_from_the_local_models_tokenizer(tmp_path: Path) -> None:
    from powercontext.bench.locomo.tradeoff import TokenCounter, prompt_text
    from powercontext.inference.llamacpp import LlamaCppServer, model_path
    from powercontext.memory.errors import ConfigurationError

    try:
        path = model_path("llamacpp:smollm2")
        server = LlamaCppServer.start(path, threads=1, context_size=512)
    except ConfigurationError as exc:
        pytest.skip(f"no local model: {exc}")
    counter = TokenCounter(server.address, "llamacpp:smollm2")
    try:
        short = prompt_text("when?", [_hit("tea")], 10, 1200)
        long = prompt_text("when?", [_hit("tea"), _hit("coffee in the morning " * 20)], 10, 1200)
        assert await counter.count("") == 0
        counted_short, counted_long = await counter.count(short), await counter.count(long)
        assert 0 < counted_short < len(LISTWISE_INSTRUCTIONS) + len(short)
        assert counted_long - counted_short >= 20 * 4  # "coffee in the morning" is 4+ tokens
    finally:
        await counter.aclose()
        server.close()
