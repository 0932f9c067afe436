"""Dialogue ids (`D30:5`) and the evidence lists that cite them, as the published file spells
them: leading zeros, stray colons and blanks, several ids joined in one string."""

from __future__ import annotations

import re

from powercontext.bench.locomo.dataset_issues import DatasetIssues

# `D:11:26` (conv-43) is `D11:26` with a stray colon: the optional `:` after `D` repairs it.
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")


def canonical_dia_id(value: str) -> str | None:
    """`D30:05` -> `D30:5`, `D:11:26` -> `D11:26`; None when the value is not one dia id."""
    match = _EVIDENCE_ID.fullmatch(value.strip())
    if match is None:
        return None
    return f"D{int(match.group(1))}:{int(match.group(2))}"


def normalize_evidence(
    raw: list[str], known: set[str], issues: DatasetIssues, where: str
) -> tuple[str, ...]:
    """The known ids of `raw`: see `resolve_evidence`."""
    return resolve_evidence(raw, known, issues, where)[0]


def _evidence_parts(item: str) -> list[str]:
    """One id (`D30:05`, `D 4 : 7`) as is; anything else split on `;`, `,` and blanks, so the
    good ids of `"D8:6; D"` survive its junk part."""
    if canonical_dia_id(item) is not None:
        return [item.strip()]
    return [part for part in _EVIDENCE_SEPARATORS.split(item.strip()) if part]


def resolve_evidence(
    raw: list[str],
    known: set[str],
    issues: DatasetIssues,
    where: str,
    unwritten: set[str] | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split joined ids, canonicalise them, and sort them into (known ids, ids naming no turn
    of `known`), both deduplicated in the file's order. Parts that are no id at all (`"D"`)
    cite nothing and are only counted. `unwritten` holds ids of turns in the file that could
    not be written (no text), counted apart from ids the file does not have."""
    kept: list[str] = []
    unresolved: list[str] = []
    for item in raw:
        parts = _evidence_parts(item)
        if len(parts) > 1:
            issues.note("evidence_split", f"{where} {item!r}")
        if not parts:
            issues.note("evidence_unparseable", f"{where} {item!r}")
        for part in parts:
            canonical = canonical_dia_id(part)
            if canonical is None:
                issues.note("evidence_unparseable", f"{where} {part!r}")
                continue
            if canonical != part:
                issues.note("evidence_reformatted", f"{where} {part!r} -> {canonical}")
            if canonical in kept or canonical in unresolved:
                issues.note("evidence_duplicate", f"{where} {canonical}")
                continue
            if canonical not in known:
                kind = "evidence_unwritten_turn" if canonical in (unwritten or ()) else None
                issues.note(kind or "evidence_unknown_id", f"{where} {canonical}")
                unresolved.append(canonical)
                continue
            kept.append(canonical)
    return tuple(kept), tuple(unresolved)
