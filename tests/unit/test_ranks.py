from datetime import UTC, datetime

from powercontext.memory.models import MemoryHit, MemoryRef
from powercontext.memory.search.ranks import normalize_ranks, resolve


def test_keeps_first_occurrence_in_model_order() -> None:
    sel = normalize_ranks([3, 1, 3, 2], candidate_count=5, limit=10)
    assert sel.selected == (3, 1, 2) and sel.discarded == (3,) and not sel.used_fallback


def test_discards_out_of_range_and_invented_ranks_in_order() -> None:
    sel = normalize_ranks([0, 99, 2, -1, 6], candidate_count=5, limit=10)
    assert sel.selected == (2,) and sel.discarded == (0, 99, -1, 6)


def test_stops_after_limit_valid_ranks() -> None:
    sel = normalize_ranks([1, 2, 3, 4], candidate_count=5, limit=2)
    assert sel.selected == (1, 2) and sel.discarded == (3, 4)


def test_sparse_selection_is_not_padded() -> None:
    assert normalize_ranks([4], candidate_count=30, limit=10).selected == (4,)


def test_fallback_only_when_nothing_valid_remains() -> None:
    sel = normalize_ranks([0, 31], candidate_count=30, limit=10)
    assert sel.used_fallback and sel.selected == tuple(range(1, 11)) and sel.discarded == (0, 31)
    empty = normalize_ranks([], candidate_count=3, limit=10)
    assert empty.used_fallback and empty.selected == (1, 2, 3)


def test_resolve_returns_the_pool_objects_themselves() -> None:
    ref = MemoryRef(scope_id="s", revision=1)
    pool = tuple(
        MemoryHit(
            memory_ref=ref,
            entry_id=f"e{i}",
            entry_version_id=f"v{i}",
            kind="fact",
            text=f"t{i}",
            metadata={"at": datetime(2024, 1, 1, tzinfo=UTC).isoformat()},
            score=1.0,
            matched_by=("fts",),
        )
        for i in range(3)
    )
    hits = resolve(pool, (3, 1))
    assert hits[0] is pool[2] and hits[1] is pool[0]
