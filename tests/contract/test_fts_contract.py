"""Contract: full-text candidates at one exact revision, safe against FTS syntax in terms."""

from __future__ import annotations

import pytest

from powercontext.memory.ports import CommitRequest, FtsCandidate, FtsQuery, MemoryStore
from powercontext.memory.search.analyze import index_tokens, query_terms

from .builders import add, retire, revise


def _keys(candidates: list[FtsCandidate]) -> list[int]:
    return [c.key for c in candidates]


async def test_candidates_contain_a_term_best_first(store: MemoryStore) -> None:
    texts = [
        "apple apple apple banana",
        "apple cherry grape melon lemon orange",
        "durian only",
        "banana split",
    ]
    result = await store.commit(CommitRequest("s", None, [add(t) for t in texts]))
    found = await store.fts_candidates(FtsQuery("s", 1, ["appl"], limit=10))
    assert set(_keys(found)) == {result.keys[0], result.keys[1]}
    assert _keys(found)[0] == result.keys[0]  # higher term frequency, shorter text
    scores = [c.score for c in found]
    assert scores == sorted(scores, reverse=True)


async def test_more_matching_terms_rank_higher(store: MemoryStore) -> None:
    texts = ["river stone", "river mountain", "lake mountain", "desert sand"]
    result = await store.commit(CommitRequest("s", None, [add(t) for t in texts]))
    found = await store.fts_candidates(
        FtsQuery("s", 1, list(query_terms("river mountain")), limit=10)
    )
    assert _keys(found)[0] == result.keys[1]
    assert set(_keys(found)) == set(result.keys[:3])


async def test_candidates_carry_their_indexed_tokens(store: MemoryStore) -> None:
    text = "Meeting moved to Tuesday in Berlin with the design team"
    result = await store.commit(CommitRequest("s", None, [add(text)]))
    (candidate,) = await store.fts_candidates(
        FtsQuery("s", 1, list(query_terms("berlin")), limit=5)
    )
    assert candidate.key == result.keys[0]
    assert candidate.tokens == frozenset(index_tokens(text).split())


async def test_limit_bounds_the_candidates(store: MemoryStore) -> None:
    await store.commit(
        CommitRequest("s", None, [add(f"common word number {i}") for i in range(30)])
    )
    assert len(await store.fts_candidates(FtsQuery("s", 1, ["common"], limit=7))) == 7
    assert len(await store.fts_candidates(FtsQuery("s", 1, ["common"], limit=100))) == 30


async def test_ties_at_the_limit_go_by_key(store: MemoryStore) -> None:
    # 200 equal scores around a better one: the limit keeps the smallest keys of the tie.
    texts = ["kayak"] * 120 + ["kayak kayak"] + ["kayak"] * 80
    result = await store.commit(CommitRequest("s", None, [add(t, tokens=t) for t in texts]))
    found = await store.fts_candidates(FtsQuery("s", 1, ["kayak"], limit=5))
    assert [c.key for c in found] == [result.keys[120], *result.keys[:4]]


async def test_an_old_revision_excludes_later_and_includes_since_retired(
    store: MemoryStore,
) -> None:
    r1 = await store.commit(CommitRequest("s", None, [add("harbor lighthouse", entry_id="e")]))
    v1 = (await store.fetch_versions("s", r1.keys))[r1.keys[0]]
    r2 = await store.commit(CommitRequest("s", 1, [add("harbor ferry")]))
    r3 = await store.commit(CommitRequest("s", 2, [revise(v1, "harbor crane")]))
    assert _keys(await store.fts_candidates(FtsQuery("s", 1, ["harbor"], limit=10))) == [r1.keys[0]]
    assert set(_keys(await store.fts_candidates(FtsQuery("s", 2, ["harbor"], limit=10)))) == {
        r1.keys[0],
        r2.keys[0],
    }
    at3 = await store.fts_candidates(FtsQuery("s", 3, ["harbor"], limit=10))
    assert set(_keys(at3)) == {r2.keys[0], r3.keys[0]}
    assert await store.fts_candidates(FtsQuery("s", 3, ["lighthous"], limit=10)) == []
    assert _keys(await store.fts_candidates(FtsQuery("s", 2, ["lighthous"], limit=10))) == [
        r1.keys[0]
    ]
    v2 = await store.latest_version("s", "e")
    assert v2 is not None
    await store.commit(CommitRequest("s", 3, [retire(v2)]))
    assert await store.fts_candidates(FtsQuery("s", 4, ["crane"], limit=10)) == []
    assert _keys(await store.fts_candidates(FtsQuery("s", 3, ["crane"], limit=10))) == [r3.keys[0]]


async def test_other_scopes_never_leak_in(store: MemoryStore) -> None:
    a = await store.commit(CommitRequest("a", None, [add("secret plan alpha")]))
    await store.commit(CommitRequest("b", None, [add("secret plan beta"), add("another secret")]))
    assert _keys(await store.fts_candidates(FtsQuery("a", 1, ["secret"], limit=10))) == list(a.keys)
    assert len(await store.fts_candidates(FtsQuery("b", 1, ["secret"], limit=10))) == 2
    assert await store.fts_candidates(FtsQuery("nobody", 1, ["secret"], limit=10)) == []


async def test_no_terms_means_no_candidates(store: MemoryStore) -> None:
    await store.commit(CommitRequest("s", None, [add("anything at all")]))
    assert await store.fts_candidates(FtsQuery("s", 1, [], limit=10)) == []
    assert await store.fts_candidates(FtsQuery("s", 1, [""], limit=10)) == []


@pytest.mark.parametrize(
    "term",
    [
        '"',
        '""',
        "*",
        "NEAR(",
        "NEAR",
        "OR",
        "AND",
        "NOT",
        "-",
        ":",
        "(",
        ")",
        "^",
        "{",
        "}",
        "tokens:x",
        "scope_tag:s1",
        'a"b',
        "x*",
        "-x",
        "a OR b",
        "\x00",
        "a\x00b",
        "😀",
        "\\",
        "'",
    ],
)
async def test_fts_syntax_in_terms_is_only_ever_text(store: MemoryStore, term: str) -> None:
    texts = ["apple pie recipe", "near the or gate and not here", "unrelated words"]
    result = await store.commit(CommitRequest("s", None, [add(t) for t in texts]))
    found = await store.fts_candidates(FtsQuery("s", 1, [term, "appl"], limit=10))
    assert result.keys[0] in _keys(found)
    assert set(_keys(found)) <= set(result.keys)
    alone = await store.fts_candidates(FtsQuery("s", 1, [term], limit=10))
    assert set(_keys(alone)) <= set(result.keys)


async def test_operator_words_are_matched_as_plain_terms(store: MemoryStore) -> None:
    result = await store.commit(CommitRequest("s", None, [add("near the or gate"), add("apple")]))
    found = await store.fts_candidates(FtsQuery("s", 1, ["near", "or"], limit=10))
    assert _keys(found) == [result.keys[0]]


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("我喜欢喝咖啡和绿茶", "咖啡"),
        ("東京タワーに行きました", "東京"),
        ("서울에서 친구를 만났다", "서울에서"),
        ("Café crème in Zürich", "zürich"),
    ],
)
async def test_cjk_and_accented_tokens_match(store: MemoryStore, text: str, query: str) -> None:
    result = await store.commit(CommitRequest("s", None, [add(text), add("plain english words")]))
    found = await store.fts_candidates(FtsQuery("s", 1, list(query_terms(query)), limit=10))
    assert _keys(found) == [result.keys[0]]
    assert set(query_terms(query)) <= found[0].tokens


@pytest.mark.parametrize(
    ("text", "other", "query"),
    [
        ("मैं दिल्ली में रहता हूँ", "दो लोग आए", "दिल्ली"),  # Devanagari vowel signs, virama
        ("வணக்கம் நண்பரே", "வந்தேன் நான்", "வணக்கம்"),  # Tamil
        ("สวัสดีครับ", "สวนสาธารณะ", "สวัสดีครับ"),  # Thai vowel and tone marks
        ("שָׁלוֹם לְכֻלָּם", "שמש בים", "שָׁלוֹם"),  # pointed Hebrew
    ],
)
async def test_words_with_combining_marks_are_whole_terms(
    store: MemoryStore, text: str, other: str, query: str
) -> None:
    """A word keeps its marks: cut at each one (as `\\w` cuts), its letters matched every
    entry sharing a consonant, and the entry holding the word did not rank first."""
    result = await store.commit(CommitRequest("s", None, [add(other), add(text)]))
    found = await store.fts_candidates(FtsQuery("s", 1, list(query_terms(query)), limit=10))
    assert _keys(found) == [result.keys[1]]
    assert query_terms(query) == (query,)


async def test_revisions_outside_the_scope_history_have_no_candidates(store: MemoryStore) -> None:
    await store.commit(CommitRequest("s", None, [add("word")]))
    assert await store.fts_candidates(FtsQuery("s", 0, ["word"], limit=10)) == []


async def test_a_term_most_of_the_scope_holds_is_left_out_on_request(
    store: MemoryStore,
) -> None:
    """FtsQuery.max_term_share (full-text feedback's expansion run): a term held in its own
    field by more than that share of the scope's versions does not count; the rest do."""
    harbor = [f"harbor {word}" for word in ("lantern", "lantern glow", "boats", "fog", "gulls")]
    texts = [*harbor, "harbor rain", "quiet street", "empty field"]
    result = await store.commit(CommitRequest("s", None, [add(t) for t in texts]))
    terms = list(query_terms("harbor lantern"))  # harbor: 6 of 8 versions, lantern: 2

    async def found(share: float | None, wanted: list[str] = terms) -> set[int]:
        query = FtsQuery("s", 1, wanted, limit=10, max_term_share=share)
        return set(_keys(await store.fts_candidates(query)))

    assert await found(None) == set(result.keys[:6])
    assert await found(1.0) == set(result.keys[:6])
    assert await found(0.75) == set(result.keys[:6])  # at the share: still counted
    assert await found(0.5) == set(result.keys[:2])
    assert await found(0.5, list(query_terms("harbor"))) == set()


async def test_a_term_more_entries_hold_than_a_bound_is_left_out_on_request(
    store: MemoryStore,
) -> None:
    """FtsQuery.max_term_entries: the same rule with a count of versions, whatever the scope's
    size; with a share as well, the tighter of the two applies."""
    texts = [f"harbor {word}" for word in ("lantern", "lantern glow", "boats", "fog")]
    result = await store.commit(CommitRequest("s", None, [add(t) for t in [*texts, "street"]]))
    terms = list(query_terms("harbor lantern"))  # harbor: 4 of 5 versions, lantern: 2

    async def found(entries: int | None, share: float | None = None) -> set[int]:
        query = FtsQuery("s", 1, terms, limit=10, max_term_entries=entries, max_term_share=share)
        return set(_keys(await store.fts_candidates(query)))

    assert await found(None) == set(result.keys[:4])
    assert await found(4) == set(result.keys[:4])  # at the bound: still counted
    assert await found(3) == set(result.keys[:2])
    assert await found(1) == set()
    assert await found(10, share=0.6) == set(result.keys[:2])  # 0.6 x 5 = 3 is tighter
    assert await found(3, share=1.0) == set(result.keys[:2])


async def test_a_common_term_finds_no_version_by_itself_on_request(store: MemoryStore) -> None:
    """FtsQuery.common_term_entries: a term more versions hold than the bound only adds to the
    scores of versions holding a rarer term; when every term is that common, the rarest finds
    the versions; when fewer than the limit hold a rarer term, every term finds versions."""
    texts = ["harbor fog", "harbor rain", "fog rain", "harbor mist", "fog mist", "harbor tide"]
    texts += ["lantern shop", "lantern harbor", "street", "market"]
    result = await store.commit(CommitRequest("s", None, [add(t) for t in texts]))
    keys = dict(zip(texts, result.keys, strict=True))

    async def ranked(terms: str, common: int | None, limit: int) -> list[int]:
        query = FtsQuery("s", 1, list(query_terms(terms)), limit=limit, common_term_entries=common)
        return _keys(await store.fts_candidates(query))

    exact = await ranked("harbor fog lantern", None, limit=10)
    # Two common words outweigh one rarer word: "harbor fog" is second.
    assert exact[:2] == [keys["lantern harbor"], keys["harbor fog"]]
    assert await ranked("harbor fog lantern", 5, limit=10) == exact  # harbor: 5, at the bound
    # Over it (harbor 5, fog 3 versions), lantern alone finds; harbor still lifts its entry.
    lantern = [keys["lantern harbor"], keys["lantern shop"]]
    assert await ranked("harbor fog lantern", 2, limit=2) == lantern
    assert await ranked("harbor fog lantern", 2, limit=3) == exact[:3]  # too few: all find
