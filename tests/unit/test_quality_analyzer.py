"""Query-side normalization: English clitics and stop words, with CJK left as it was."""

from __future__ import annotations

from powercontext.memory.search.analyze import AnalyzerConfig, analyze, query_terms

CLITICS = AnalyzerConfig(strip_clitics=True)


def test_possessives_and_contractions_leave_no_letter_fragments() -> None:
    text = "Caroline's kids don't think we're late; I'm sure they'll go, it’s fine"
    assert analyze(text, CLITICS) == [
        "carolin", "kid", "don", "think", "we", "late", "i", "sure", "they", "go", "it", "fine"
    ]  # fmt: skip
    assert {"s", "t", "re", "m", "ll"} <= set(analyze(text))


def test_index_and_query_agree_on_possessives() -> None:
    (entry,) = [analyze("Caroline's", CLITICS)]
    assert query_terms("What is Caroline's job?", CLITICS) == ("what", "is", *entry, "job")


def test_names_with_apostrophes_and_numbers_keep_their_parts() -> None:
    assert analyze("O'Neil 90's", CLITICS) == ["o", "neil", "90", "s"]


def test_clitics_are_only_english() -> None:
    french = AnalyzerConfig(language="french", strip_clitics=True)
    assert analyze("l'homme d'affaires", french) == analyze(
        "l'homme d'affaires", AnalyzerConfig(language="french")
    )
    assert "s" in analyze("Anna's", AnalyzerConfig(language=None, strip_clitics=True))


def test_cjk_is_untouched() -> None:
    assert analyze("中文检索 東京 tower", CLITICS) == analyze("中文检索 東京 tower")
    assert analyze("中文检索's", CLITICS) == ["中", "文", "检", "索", "中文", "文检", "检索"]


def test_stopwords_and_clitics_together_keep_the_content_words() -> None:
    both = AnalyzerConfig(strip_clitics=True, drop_query_stopwords=True)
    assert query_terms("What is Melanie's favourite book?", both) == ("melani", "favourit", "book")
