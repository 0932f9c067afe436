import pytest

from powercontext.memory.errors import CapabilityNotSupportedError
from powercontext.memory.search.modes import channel_limit, coarse_limit, select_mode


def test_auto_is_hybrid_only_with_complete_vectors() -> None:
    assert select_mode("auto", has_embedder=True, missing_vectors=0) == "hybrid"
    assert select_mode("auto", has_embedder=True, missing_vectors=3) == "fts"
    assert select_mode("auto", has_embedder=False, missing_vectors=0) == "fts"


def test_fts_always_available() -> None:
    assert select_mode("fts", has_embedder=False, missing_vectors=9) == "fts"


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_explicit_modes_never_downgrade(mode: str) -> None:
    with pytest.raises(CapabilityNotSupportedError, match="EMBEDDING_MODEL"):
        select_mode(mode, has_embedder=False, missing_vectors=0)  # type: ignore[arg-type]
    with pytest.raises(CapabilityNotSupportedError, match="reindex"):
        select_mode(mode, has_embedder=True, missing_vectors=2, profile_id="p")  # type: ignore[arg-type]
    assert select_mode(mode, has_embedder=True, missing_vectors=0) == mode  # type: ignore[arg-type]


def test_coarse_limit_follows_the_rfc() -> None:
    assert coarse_limit(10, 30, reranking=False) == 10
    assert coarse_limit(10, 30, reranking=True) == 30
    assert coarse_limit(50, 30, reranking=True) == 50


def test_channel_limit_is_four_times_with_a_floor_of_32() -> None:
    assert channel_limit(1) == 32
    assert channel_limit(8) == 32
    assert channel_limit(9) == 36
    assert channel_limit(30) == 120
