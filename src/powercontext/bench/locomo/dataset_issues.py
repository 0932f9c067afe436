"""DatasetIssues: the tally of the published file's quirks met while loading it.

Kept apart from the model so that the field parsers (evidence_ids) can count what they
normalise without importing the loader that calls them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
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

    @classmethod
    def merged(cls, parts: Iterable[DatasetIssues], limit: int = 5) -> DatasetIssues:
        """The tally of several (each conversation's), examples kept in order up to `limit`."""
        total = cls()
        for part in parts:
            total.counts.update(part.counts)
            for kind, values in part.examples.items():
                shown = total.examples.setdefault(kind, [])
                shown.extend(values[: max(0, limit - len(shown))])
        return total

    def as_dict(self) -> dict[str, Any]:
        return {
            "counts": dict(sorted(self.counts.items())),
            "examples": {kind: list(values) for kind, values in sorted(self.examples.items())},
        }
