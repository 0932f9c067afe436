"""An experiment, not a feature: related words by embedding for the full-text channel.

The misses left at R@30 are vocabulary mismatch (docs/search-quality.md): the evidence
shares no content word with the question. Feedback brings in the words of the question's
best matches; this asks whether the embedding model can bring in related words directly.
Every distinct stemmed word of a scope's own texts is embedded once (its most frequent
surface form, by all-MiniLM-L6-v2); for each question term, the scope's words at cosine
>= `tau` (at most `per` a term, `most` in all; none held by more than `share` of the
scope's entries) become a third full-text run, merged into the channel's ranking after
feedback at `weight` by reciprocal rank, like the feedback run.

It runs on a database `locomo_ablation.py --variant defaults` wrote, patching the feedback
stage in this process only (the store would need a term-vector table per scope to ship it):

    python bench/locomo_term_neighbours.py RUN_DIR/defaults \
        --variant 2:0.6:2:5:0.15 --variant 0.6:2:5:0.3 --results locomo_term_neighbours

A variant is TAU:PER:MOST:WEIGHT; TAU 2 (no word is that close) replays the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import locomo_replay as replay_module
import numpy as np
import Stemmer

from powercontext.bench.locomo.dataset import load_dataset
from powercontext.inference.embeddings.local import LocalMiniLM
from powercontext.memory.search import feedback
from powercontext.memory.search.admission import admit
from powercontext.memory.search.analyze import ENGLISH_STOPWORDS, AnalyzerConfig, surface_words

ANALYZER = AnalyzerConfig()
STEMMER = Stemmer.Stemmer("english")  # the analyzer's default language
SHARE = 0.2  # the feedback's scope-share rule, for the same reason


@dataclass
class Variant:
    tau: float
    per: int
    most: int
    weight: float

    @property
    def name(self) -> str:
        return f"tau {self.tau}, {self.per} a term, {self.most} in all, weight {self.weight}"


class Vocabulary:
    """Each scope's stemmed words with one embedding each, and their entry counts."""

    def __init__(self, database: Path, questions: Sequence[str]) -> None:
        entries: dict[str, Counter[str]] = defaultdict(Counter)
        self.size: Counter[str] = Counter()
        forms: dict[str, Counter[str]] = defaultdict(Counter)
        with sqlite3.connect(database) as db:
            rows = db.execute(
                "SELECT scope_id, text FROM entry_versions WHERE removed_revision IS NULL"
            ).fetchall()
        for scope_id, text in rows:
            # The harness writes "Speaker: words"; the speaker's name is no topic word.
            stems = self._count(text.split(":", 1)[-1], forms)
            self.size[scope_id] += 1
            entries[scope_id].update(set(stems))
        for question in questions:
            self._count(question, forms)
        self.stems = sorted(
            s for s in forms if len(s) >= 3 and not s.isdigit() and s not in ENGLISH_STOPWORDS
        )
        self.index = {s: i for i, s in enumerate(self.stems)}
        words = [forms[s].most_common(1)[0][0] for s in self.stems]
        vectors = asyncio.run(LocalMiniLM().embed_documents(words))
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.rows = {
            scope: np.array(
                [
                    self.index[s]
                    for s, n in counts.items()
                    if s in self.index and n <= SHARE * self.size[scope]
                ]
            )
            for scope, counts in entries.items()
        }

    @staticmethod
    def _count(text: str, forms: dict[str, Counter[str]]) -> list[str]:
        words = surface_words(text, ANALYZER)
        stems: list[str] = STEMMER.stemWords(words)
        for word, stem in zip(words, stems, strict=True):
            forms[stem][word] += 1
        return stems

    def neighbours(self, scope: str, query: Sequence[str], variant: Variant) -> list[str]:
        rows = self.rows[scope]
        found: list[str] = []
        for term in query:
            if term not in self.index:
                continue
            similarity = self.vectors[rows] @ self.vectors[self.index[term]]
            taken = 0
            for j in np.argsort(-similarity)[: variant.per + len(query)]:
                stem = self.stems[rows[j]]
                if similarity[j] < variant.tau or taken == variant.per:
                    break
                if stem not in query and stem not in found:
                    found.append(stem)
                    taken += 1
        return found[: variant.most]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="the ablation's `defaults` output directory")
    parser.add_argument("--variant", action="append", required=True, help="TAU:PER:MOST:WEIGHT")
    parser.add_argument("--data", type=Path, default=replay_module.DATA)
    parser.add_argument("--results", help="write bench/results/NAME.json")
    args = parser.parse_args()
    variants = [
        Variant(*(float(v) if "." in v else int(v) for v in s.split(":"))) for s in args.variant
    ]
    dataset = load_dataset(args.data)
    vocabulary = Vocabulary(
        args.run / replay_module.DATABASE_FILE,
        [qa.question for conversation in dataset.conversations for qa in conversation.qa],
    )
    scope = {"id": ""}
    plan_ingest = replay_module.plan_ingest

    def planned(conversation: Any, how: str) -> Any:
        plan = plan_ingest(conversation, how)
        scope["id"] = plan.scope_id
        return plan

    replay_module.plan_ingest = planned
    with_feedback = feedback.with_feedback
    current = {"variant": variants[0]}

    async def with_neighbours(query, found, admitted, channel, config, analyzer, *, k):  # type: ignore[no-untyped-def]
        merged, fed = await with_feedback(query, found, admitted, channel, config, analyzer, k=k)
        extra = vocabulary.neighbours(scope["id"], tuple(query), current["variant"])
        if not extra:
            return merged, fed
        third = await channel(extra)
        ranked = admit(third, (), extra).keys["fts"]
        weight = current["variant"].weight
        return feedback.merge_rankings(merged, ranked, weight=weight, k=k), [*fed, *third]

    feedback.with_feedback = with_neighbours
    namespace = argparse.Namespace(run=args.run, data=args.data, tune=["conv-26", "conv-30"])
    results = []
    for variant in variants:
        current["variant"] = variant
        result = asyncio.run(replay_module.replay(namespace, []))
        results.append({"name": variant.name, **result})
        print(replay_module._row(results[-1]), flush=True)
    if args.results:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import corpus

        corpus.write_results(args.results, {"run": str(args.run), "variants": results})
    else:
        print(json.dumps([r["all"] for r in results]))


if __name__ == "__main__":
    main()
