"""A whole in-process run over a conversation holding every quirk of the official file: it
completes, scores only what can be scored, and reports the rest as unscorable."""

from __future__ import annotations

import json
from pathlib import Path

from powercontext import ServerSettings
from powercontext.bench.locomo import RunConfig, run_locomo
from powercontext.config import InferenceConfig
from tests.unit.test_locomo_official_quirks import OFFICIAL_SHAPE


class AbstainingModel:
    """Always abstains; records every judge prompt it is sent."""

    def __init__(self) -> None:
        self.judged: list[str] = []

    async def __call__(self, system: str, prompt: str) -> str:
        if "Verdict" in prompt:
            self.judged.append(prompt)
            return "WRONG"
        return "Not mentioned in the conversation."


async def test_a_run_over_every_quirk_scores_what_it_can_and_reports_the_rest(
    tmp_path: Path,
) -> None:
    data = tmp_path / "locomo10-shaped.json"
    data.write_text(json.dumps(OFFICIAL_SHAPE), encoding="utf-8")
    model = AbstainingModel()
    outputs = await run_locomo(
        RunConfig(
            data=data,
            out=tmp_path / "out",
            mode="fts",
            top_k=5,
            answer_k=2,
            answer=True,
            judge="strict",
        ),
        base_settings=ServerSettings(inference=InferenceConfig(embedding_model="none")),
        answer_generator=model,
        judge_generator=model,
        show_progress=False,
    )
    results = outputs.results
    assert results["ingest"]["conv-q"]["entries"] == 7
    dataset = results["dataset"]
    assert dataset["questions"] == 8
    assert dataset["questions_without_evidence"] == 2
    assert dataset["questions_with_unresolved_evidence"] == 2
    # 8 questions, less the 2 whose evidence names no written turn
    assert results["retrieval"]["scored_questions"] == 6
    assert results["retrieval"]["final"]["by_category"]["overall"]["n"] == 5

    records = {
        r["question"]: r
        for r in json.loads((tmp_path / "out" / "conversations" / "conv-q.json").read_text())[
            "records"
        ]
    }
    assert records["no turn"]["evidence"] == []
    assert records["no turn"]["unresolved_evidence"] == ["D10:19"]
    assert records["stray colon"]["evidence"] == ["D11:26"]
    # The category-3 item without a gold answer is answered but neither scored nor judged.
    assert "answer_scores" not in records["no gold"] and "judge" not in records["no gold"]
    assert len(model.judged) == 7
    assert records["adversarial"]["answer_scores"]["f1"] == 1.0
    assert results["answers"]["unscorable"] == 1

    report = outputs.paths.report.read_text()
    assert "of which 2 cite a turn the conversation does not hold and are unscorable" in report
    assert "Unscored: 1 answered questions" in report
    assert "`session_date_unparseable`: 1" in report
