"""DatasetIssues: the tally of the published file's quirks met while loading it.

Kept apart from the model so that the field parsers (evidence_ids) can count what they
normalise without importing the loader that calls them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class DatasetIssues:
    """Counts of every quirk met while loading, with a few examples of each for the report."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, kind: str, example: str, limit: int = 5) -> None:
        self.counts[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < limit:
            shown.append(example)

    def as_dict(self) -> dict[str, Any]:
        return {
            "counts": dict(sorted(self.counts.items())),
            "examples": {kind: list(values) for kind, values in sorted(self.examples.items())},
        }
