"""Contextual indexing: neighbours of the same batch and group widen what the channels see."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from powercontext.memory.indexing.context import (
    IndexSource,
    IndexTextConfig,
    embedding_inputs,
    fts_tokens,
    neighbourhoods,
)
from powercontext.memory.search.analyze import AnalyzerConfig, query_terms

PLAIN = AnalyzerConfig(language=None)


def _batch(*rows: tuple[str, str | None]) -> list[IndexSource]:
    return [
        IndexSource(kind="turn", text=text, metadata={} if group is None else {"thread": group})
        for text, group in rows
    ]


def _thread(*texts: str) -> list[IndexSource]:
    return [IndexSource(kind="turn", text=text, metadata={}, thread="t") for text in texts]


def test_off_by_default_tokens_are_the_analyzed_text() -> None:
    sources = _batch(("alpha beta", "a"), ("gamma", "a"))
    assert fts_tokens(sources, IndexTextConfig(), PLAIN) == ["alpha beta", "gamma"]
    assert embedding_inputs(sources, IndexTextConfig()) == [("alpha beta",), ("gamma",)]


def test_template_reaches_both_channels() -> None:
    config = IndexTextConfig(template="{text}\n{metadata[thread]}")
    (source,) = _batch(("alpha", "t1"))
    assert fts_tokens([source], config, PLAIN) == ["alpha t1"]
    assert embedding_inputs([source], config) == [("alpha\nt1",)]


def test_window_stays_inside_the_group_in_batch_order() -> None:
    sources = _batch(("a0", "x"), ("b0", "y"), ("a1", "x"), ("a2", "x"), ("b1", "y"))
    config = IndexTextConfig(context_before=1, context_after=1, context_group_key="thread")
    assert neighbourhoods(sources, config) == [
        ([], [2]),
        ([], [4]),
        ([0], [3]),
        ([2], []),
        ([1], []),
    ]
    assert fts_tokens(sources, config, PLAIN) == [
        "a0 _a1",
        "b0 _b1",
        "a1 _a0 _a2",
        "a2 _a1",
        "b1 _b0",
    ]


def test_without_a_thread_or_group_key_an_entry_has_no_neighbours() -> None:
    # Contextual indexing is on by default; entries with neither stay indexed as before.
    sources = _batch(("a", "x"), ("b", "y"), ("c", None))
    config = IndexTextConfig(context_before=1)
    assert neighbourhoods(sources, config) == [([], []), ([], []), ([], [])]


def test_the_thread_groups_neighbours_before_any_metadata_key() -> None:
    sources = [
        IndexSource("turn", "a", {"g": 1}, thread="t"),
        IndexSource("turn", "b", {"g": 1}),
        IndexSource("turn", "c", {"g": 2}, thread="t"),
        IndexSource("turn", "d", {"g": 1}),
    ]
    config = IndexTextConfig(context_before=1, context_after=1, context_group_key="g")
    assert neighbourhoods(sources, config) == [([], [2]), ([], [3]), ([0], []), ([1], [])]


def test_entries_lacking_the_group_key_get_no_neighbours() -> None:
    sources = _batch(("a", None), ("b", None), ("c", "x"))
    config = IndexTextConfig(context_before=2, context_after=2, context_group_key="thread")
    assert neighbourhoods(sources, config) == [([], []), ([], []), ([], [])]


def test_group_values_compare_as_json_so_lists_and_numbers_work() -> None:
    sources = [
        IndexSource("turn", "a", {"g": [1, 2]}),
        IndexSource("turn", "b", {"g": [1, 2]}),
        IndexSource("turn", "c", {"g": 1}),
        IndexSource("turn", "d", {"g": "1"}),
    ]
    config = IndexTextConfig(context_after=1, context_group_key="g")
    assert neighbourhoods(sources, config) == [([], [1]), ([], []), ([], []), ([], [])]


def test_embedding_mixes_the_entry_with_its_neighbourhood() -> None:
    sources = _batch(("first", "x"), ("second", "x"), ("third", "x"))
    config = IndexTextConfig(context_before=1, context_after=1, context_group_key="thread")
    assert embedding_inputs(sources, config) == [
        ("first", "first\nsecond"),
        ("second", "first\nsecond\nthird"),
        ("third", "second\nthird"),
    ]


def test_a_lone_entry_embeds_as_itself_even_with_context_on() -> None:
    config = IndexTextConfig(context_before=2, context_after=2)
    assert embedding_inputs(_batch(("only", None)), config) == [("only",)]


def test_channels_can_take_context_separately() -> None:
    sources = _thread("a", "b")
    fts_only = IndexTextConfig(context_before=1, context_vector=False)
    vector_only = IndexTextConfig(context_before=1, context_fts=False)
    assert fts_tokens(sources, fts_only, PLAIN) == ["a", "b _a"]
    assert embedding_inputs(sources, fts_only) == [("a",), ("b",)]
    assert fts_tokens(sources, vector_only, PLAIN) == ["a", "b"]
    assert embedding_inputs(sources, vector_only) == [("a",), ("b", "a\nb")]


def test_neighbours_are_cut_but_the_entry_is_not() -> None:
    sources = _thread("x" * 20, "own " * 10)
    config = IndexTextConfig(context_before=1, context_neighbour_chars=5)
    assert embedding_inputs(sources, config)[1] == ("own " * 10, "xxxxx\n" + "own " * 10)
    assert fts_tokens(sources, config, PLAIN)[1] == "own " * 9 + "own _xxxxx"


def test_neighbour_words_are_stemmed_like_the_query() -> None:
    sources = _thread("we went hiking", "it was lovely")
    config = IndexTextConfig(context_before=1)
    tokens = fts_tokens(sources, config, AnalyzerConfig())[1].split()
    assert {"_" + term for term in query_terms("hikes")} <= set(tokens)


@pytest.mark.parametrize("field", ["context_before", "context_after", "context_neighbour_chars"])
def test_invalid_windows_are_rejected(field: str) -> None:
    with pytest.raises(ValueError):
        IndexTextConfig(**{field: -1})


def test_the_speaker_is_indexed_as_its_own_field() -> None:
    sources = [IndexSource("turn", "we went out", {"speaker": "Caroline Smith"})]
    assert fts_tokens(sources, IndexTextConfig(), PLAIN) == ["we went out @caroline @smith"]
    no_key = IndexTextConfig(speaker_key=None)
    assert fts_tokens(sources, no_key, PLAIN) == ["we went out"]


def test_a_given_event_time_is_indexed_as_words() -> None:
    sources = [IndexSource("turn", "we met", {}, occurred_at=datetime(2023, 5, 8, 13, tzinfo=UTC))]
    assert embedding_inputs(sources, IndexTextConfig()) == [("we met\n8 May 2023",)]
    assert embedding_inputs(sources, IndexTextConfig(event_date=False)) == [("we met",)]
