"""Words of the CLI's human output: counts with the right noun form, and lines that wrap only
between phrases. `--json` output never goes through here."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len


def counted(count: int, noun: str) -> str:
    """`1 entry`, `2 entries`, `0 hits`: the nouns the CLI counts are regular English ones."""
    if count == 1:
        return f"{count} {noun}"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return f"{count} {noun[:-1]}ies"
    return f"{count} {noun}s"


def phrase_lines(phrases: Sequence[str], width: int) -> list[str]:
    """The phrases joined by spaces, broken only between phrases (continuations indented).

    Rich wraps at any space, which can leave `(head` at the end of one line and `1)` at the
    start of the next; a phrase wider than `width` alone is left for rich to fold."""
    lines: list[str] = []
    for phrase in phrases:
        if not lines:
            lines.append(phrase)
        elif cell_len(f"{lines[-1]} {phrase}") <= width:
            lines[-1] = f"{lines[-1]} {phrase}"
        else:
            lines.append(f"  {phrase}")
    return lines
