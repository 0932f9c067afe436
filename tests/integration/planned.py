"""Planned additions for store-level tests: one `add` change per text, ids e<i>/v<i>."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from powercontext.memory.ports import NewVersion, PlannedChange


def planned_adds(
    texts: Sequence[str], start: int = 0, tokens: Callable[[str], str] = str
) -> list[PlannedChange]:
    """Entry `e<start + n>` (version `v<start + n>`) of kind fact for the n-th text, indexed as
    `tokens` makes it (default: as written)."""
    return [
        PlannedChange(
            op="add",
            new=NewVersion(
                entry_id=f"e{i}",
                entry_version_id=f"v{i}",
                version=1,
                kind="fact",
                text=text,
                metadata={},
                index_tokens=tokens(text),
            ),
        )
        for i, text in enumerate(texts, start=start)
    ]
