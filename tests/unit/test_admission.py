from powercontext.memory.ports import FtsCandidate, VectorCandidate
from powercontext.memory.search.admission import admit, required_fts_terms


def test_required_terms_follow_the_rule() -> None:
    # <= 2 terms: 1; else max(2, ceil(0.25 * n))
    assert [required_fts_terms(n) for n in (1, 2, 3, 8, 9, 12, 13)] == [1, 1, 2, 2, 3, 3, 4]


def _fts(key: int, *tokens: str) -> FtsCandidate:
    return FtsCandidate(key=key, score=-1.0, tokens=frozenset(tokens))


def _admit_fts(found: list[FtsCandidate], terms: tuple[str, ...]) -> list[int]:
    return admit(found, [], terms).keys["fts"]


def test_fts_admission_counts_distinct_query_terms_and_keeps_order() -> None:
    terms = ("alpha", "beta", "gamma")  # needs 2
    found = [_fts(1, "alpha"), _fts(2, "alpha", "beta"), _fts(3, "gamma", "beta", "x")]
    assert _admit_fts(found, terms) == [2, 3]


def test_fts_admission_short_query_needs_one_term() -> None:
    assert _admit_fts([_fts(5, "beta")], ("alpha", "beta")) == [5]


def test_duplicate_query_terms_count_once() -> None:
    assert _admit_fts([_fts(1, "a")], ("a", "a", "a")) == [1]


def test_vector_admission_threshold_is_inclusive_and_no_backfill() -> None:
    found = [VectorCandidate(1, 0.9), VectorCandidate(2, 0.3), VectorCandidate(3, 0.29)]
    assert admit([], found, ()).keys["vector"] == [1, 2]
    assert admit([], found, (), min_similarity=0.5).keys["vector"] == [1]


def test_min_score_floors_full_text_before_admission() -> None:
    found = [
        FtsCandidate(key=1, score=3.0, tokens=frozenset({"a"})),
        FtsCandidate(key=2, score=1.0, tokens=frozenset({"a"})),
    ]
    admitted = admit(found, [], ("a",), min_score=2.0)
    assert admitted.keys["fts"] == [1]
    assert [c.key for c in admitted.fts_found] == [1]
    assert admit(found, [], ("a",)).keys["fts"] == [1, 2]
