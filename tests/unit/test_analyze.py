from powercontext.memory.search.analyze import AnalyzerConfig, analyze, index_tokens, query_terms


def test_casefold_and_stem() -> None:
    assert analyze("Running RUNS ran") == ["run", "run", "ran"]


def test_no_stemming_when_language_is_none() -> None:
    assert analyze("Running dogs", AnalyzerConfig(language=None)) == ["running", "dogs"]


def test_punctuation_and_fts_syntax_are_separators() -> None:
    assert analyze('"quoted" * NEAR( a OR b - c: d') == ["quot", "near", "a", "or", "b", "c", "d"]


def test_underscore_splits_like_the_index_tokenizer() -> None:
    assert analyze("snake_case", AnalyzerConfig(language=None)) == ["snake", "case"]


def test_cjk_unigrams_and_bigrams() -> None:
    assert analyze("中文检索") == ["中", "文", "检", "索", "中文", "文检", "检索"]


def test_japanese_mixed_with_latin() -> None:
    tokens = analyze("東京 tower")
    assert tokens == ["tower", "東", "京", "東京"]


def test_emoji_and_nul_never_crash() -> None:
    assert analyze("🎉 party\x00time") == ["parti", "time"]


def test_index_tokens_keep_repeats() -> None:
    assert index_tokens("cat cat dog", AnalyzerConfig(language=None)) == "cat cat dog"


def test_query_terms_are_distinct_in_first_seen_order() -> None:
    assert query_terms("dog cat dog", AnalyzerConfig(language=None)) == ("dog", "cat")


def test_stopwords_dropped_only_when_configured_and_something_remains() -> None:
    on = AnalyzerConfig(language=None, drop_query_stopwords=True)
    assert query_terms("what is the plan", on) == ("plan",)
    assert query_terms("what is the", on) == ("what", "is", "the")
    assert query_terms("what is the plan", AnalyzerConfig(language=None)) == (
        "what",
        "is",
        "the",
        "plan",
    )


def test_long_tokens_are_capped() -> None:
    (token,) = analyze("x" * 500, AnalyzerConfig(language=None))
    assert len(token) == 64


def test_the_combining_marks_table_is_unicodes() -> None:
    """search/marks.py is a printed table: it must hold exactly the marks (Mn, Mc, Me) of the
    unicodedata it was printed from, and only marks under a newer one."""
    import re
    import unicodedata

    from powercontext.memory.search.marks import COMBINING_MARKS, UNICODE_VERSION

    in_table = re.compile(f"[{COMBINING_MARKS}]")
    marks = {c for c in range(0x110000) if unicodedata.category(chr(c)).startswith("M")}
    table = {c for c in range(0x110000) if in_table.fullmatch(chr(c))}
    if unicodedata.unidata_version == UNICODE_VERSION:
        assert table == marks
    else:
        assert table <= marks


def test_a_mark_stays_in_the_word_it_follows() -> None:
    from powercontext.memory.search.analyze import analyze

    assert analyze("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]
    assert analyze("\u0301x a\u0301b") == ["x", "a\u0301b"]  # a leading mark is no word
