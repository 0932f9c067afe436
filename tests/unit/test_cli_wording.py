"""The CLI's wording helpers: counted nouns and lines broken only between phrases."""

from __future__ import annotations

from powercontext.cli.wording import counted, phrase_lines


def test_counted_uses_the_singular_for_one_only() -> None:
    assert [counted(n, "entry") for n in (0, 1, 2)] == ["0 entries", "1 entry", "2 entries"]
    assert [counted(n, "hit") for n in (0, 1, 2)] == ["0 hits", "1 hit", "2 hits"]
    assert counted(1, "revision") == "1 revision" and counted(3, "key") == "3 keys"


def test_phrase_lines_break_only_between_phrases() -> None:
    phrases = ("imported into team-alpha:", "3 added,", "in 1 revision", "(head 12)")
    assert phrase_lines(phrases, 80) == [" ".join(phrases)]
    lines = phrase_lines(phrases, 40)
    assert lines == ["imported into team-alpha: 3 added,", "  in 1 revision (head 12)"]
    assert all(len(line) <= 40 for line in lines)
    # A phrase wider than the line stays whole on its own line (rich folds it).
    assert phrase_lines(("x" * 50, "(head 1)"), 40) == ["x" * 50, "  (head 1)"]
