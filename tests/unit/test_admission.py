from powercontext.memory.ports import FtsCandidate, VectorCandidate
from powercontext.memory.search.admission import admit_fts, admit_vector, required_fts_terms


def test_required_terms_follow_the_rule() -> None:
    # <= 2 terms: 1; else max(2, ceil(0.25 * n))
    assert [required_fts_terms(n) for n in (1, 2, 3, 8, 9, 12, 13)] == [1, 1, 2, 2, 3, 3, 4]


def _fts(key: int, *tokens: str) -> FtsCandidate:
    return FtsCandidate(key=key, score=-1.0, tokens=frozenset(tokens))


def test_fts_admission_counts_distinct_query_terms_and_keeps_order() -> None:
    terms = ("alpha", "beta", "gamma")  # needs 2
    found = [_fts(1, "alpha"), _fts(2, "alpha", "beta"), _fts(3, "gamma", "beta", "x")]
    assert admit_fts(found, terms) == [2, 3]


def test_fts_admission_short_query_needs_one_term() -> None:
    assert admit_fts([_fts(5, "beta")], ("alpha", "beta")) == [5]


def test_duplicate_query_terms_count_once() -> None:
    assert admit_fts([_fts(1, "a")], ("a", "a", "a")) == [1]


def test_vector_admission_threshold_is_inclusive_and_no_backfill() -> None:
    found = [VectorCandidate(1, 0.9), VectorCandidate(2, 0.3), VectorCandidate(3, 0.29)]
    assert admit_vector(found) == [1, 2]
    assert admit_vector(found, 0.5) == [1]
