"""RuntimeConfig (POWERCONTEXT_SERVER_RUNTIME_*): how the runtime searches, reranks and indexes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator

from powercontext.config.environment import SettingsGroup, blank_to_none
from powercontext.memory.search.candidates import DEFAULT_CLASS_LIMITS, validate_class_limits


class RuntimeConfig(SettingsGroup):
    memory_rerank_enabled: bool = False
    memory_rerank_candidate_limit: int = Field(default=30, ge=1, le=100)
    memory_rerank_max_candidate_chars: int = Field(default=1200, ge=64, le=32768)
    """Per-candidate text budget in the rerank prompt; longer entries are cut and traced."""
    memory_rerank_provider: Literal["llm", "endpoint"] = "llm"
    """`llm`: the listwise policy over the generation model; `endpoint`: a `POST /rerank`
    service (Cohere-, Jina-, TEI-compatible) at memory_rerank_endpoint_url."""
    memory_rerank_failure_policy: Literal["fail_closed", "fail_open"] = "fail_closed"
    """`fail_open` serves the coarse first k when the provider times out or is unavailable,
    marked `degraded_provider_error`; output that stays invalid is served the same way, marked
    `degraded_invalid_output`."""
    memory_rerank_timeout_seconds: float | None = Field(default=None, gt=0, le=3600)
    """The rerank stage's own deadline (all requests and retries of one rerank); unset: only
    the provider's timeout (and search_timeout_seconds) applies."""
    search_timeout_seconds: float | None = Field(default=None, gt=0, le=3600)
    """A search's deadline from its start: the rerank stage ends 50 ms before it, so that a
    fail-open search serves the coarse page in time. Set it to the callers' request timeout
    or a little under; unset: no search deadline."""
    memory_rerank_cache_ttl_seconds: float = Field(default=0.0, ge=0, le=86_400)
    """Reuse a decision for the same policy, query, candidate versions and limit; 0: off."""
    memory_rerank_cache_max_entries: int = Field(default=1024, ge=1, le=1_000_000)
    vector_backfill_interval_seconds: float = Field(default=30.0, ge=0, le=86_400)
    """Fill vectors left pending (a crash or a provider failure after a text commit) when the
    runtime opens and then every N seconds, in the background; 0: only `reindex` fills them."""
    memory_rerank_endpoint_url: str | None = None
    """The full URL of the rerank endpoint, e.g. `http://127.0.0.1:8080/rerank`."""
    memory_rerank_endpoint_api_key: SecretStr | None = None
    """Sent as `Authorization: Bearer ...`; never logged."""
    memory_rerank_endpoint_model: str | None = None
    """Sent as `model` when set (Cohere and Jina need it; TEI ignores it)."""
    memory_rerank_endpoint_threshold: float | None = Field(default=None, allow_inf_nan=False)
    """Keep only candidates scoring at least this (sparse selection); unset: keep all."""
    memory_rerank_endpoint_top_k: int | None = Field(default=None, ge=1, le=100)
    """At most this many selected candidates (and the caller's limit, whichever is smaller)."""
    memory_rerank_endpoint_documents_field: Literal["documents", "texts"] = "documents"
    """The request's list of candidate texts: `documents` (Cohere, Jina) or `texts` (TEI)."""
    memory_rerank_candidate_policy: Literal["fixed", "by_class"] = "fixed"
    """`fixed`: every reranked search pools memory_rerank_candidate_limit candidates;
    `by_class` (powercontext.memory.candidates.by_class.v2): the query's class picks the
    limit from memory_rerank_candidate_limits_by_class."""
    memory_rerank_candidate_limits_by_class: dict[str, int] = Field(
        default_factory=lambda: dict(DEFAULT_CLASS_LIMITS)
    )
    """Candidate limit per query class (one_fact, list, count, time, comparison), 1..100;
    a JSON object in the environment; classes left out keep their default."""
    max_batch_queries: int = Field(default=64, ge=1, le=1024)
    """The most searches one batch search may carry; more is a 422 naming this limit."""
    search_min_similarity: float = Field(default=0.3, ge=-1.0, le=1.0)
    search_rrf_k: int = Field(default=20, ge=1, le=10_000)
    """RRF's k. 20, not the RFC's 60: with two channels of 30+ candidates, a smaller k lets a
    candidate ranked high by one channel outrank one ranked middling by both (measured in
    docs/search-quality.md)."""
    search_rrf_weight_fts: float = Field(default=1.0, ge=0.0, le=100.0)
    search_rrf_weight_vector: float = Field(default=0.7, ge=0.0, le=100.0)
    """0.7 since issue 17: with thread context the full-text channel weighs each neighbour's
    word by field (BM25F), while the vector blends the neighbourhood in; on LoCoMo the lower
    vector weight raised R@10 on the tuning and the held-out conversations alike."""
    search_fts_common_term_entries: int = Field(default=5_000, ge=0, le=100_000_000)
    """Full-text channel: a question's term held in their own text by more than this many
    entries of the scope finds no entry by itself; it adds to the scores of the entries that
    hold one of the question's rarer terms (the rarest always finds entries; where fewer
    entries than asked for hold a rarer term, every term finds). It bounds the work of a
    question of common words in a large scope; a scope of up to this many entries gets the
    exact BM25 top (0: exact in every scope)."""
    search_field_weight_context: float = Field(default=0.5, ge=0.0, le=10.0)
    """Full-text channel (BM25F): a neighbour's word against the entry's own word (1.0)."""
    search_field_weight_speaker: float = Field(default=0.5, ge=0.0, le=10.0)
    """Full-text channel: a query term naming the entry's speaker (`index_speaker_key`)."""
    search_feedback_docs: int = Field(default=3, ge=0, le=50)
    """Pseudo-relevance feedback in the full-text channel: the first N admitted entries are
    read as relevant, and their shared specific words run the channel again (0: off). 3,
    not 5 or 10: the fewer, the surer they are relevant (measured in docs/search-quality.md)."""
    search_feedback_terms: int = Field(default=5, ge=0, le=50)
    """Expansion terms taken from the feedback entries (5: as good as 10 on LoCoMo, and each
    term is one more posting list in the second full-text run)."""
    search_feedback_weight: float = Field(default=0.5, ge=0.0, le=10.0)
    """The expansion ranking's weight against the question's own (1.0), merged by RRF."""
    search_feedback_min_lift: float = Field(default=2.0, ge=0.0, le=100.0)
    """An expansion term must be at least this many times as common among the feedback
    entries as among the other full-text candidates: a scope's common words say nothing about
    the question's topic, and a second run over one ranks a large share of the scope (0: no
    such rule, the behaviour before)."""
    search_feedback_max_scope_share: float = Field(default=0.2, ge=0.0, le=1.0)
    """An expansion term held in their own text by more than this share of the scope's
    entries is left out of the second full-text run: it names no topic, and a run over it
    scores most of the scope (1: no such rule, the behaviour before)."""
    search_feedback_max_scope_entries: int = Field(default=2_000, ge=0, le=100_000_000)
    """...and so is one held in their own text by more than this many entries, whatever the
    scope's size: it bounds the second run's work in a large scope, where a share is still a
    long posting list (0: no such rule). Scopes of up to 10,000 entries never reach it
    before the share does."""
    search_vector_feedback_docs: int = Field(default=0, ge=0, le=10)
    """Query expansion in the vector channel: the text of the first N admitted full-text
    entries joins the question in a second query embedding (0: off; one more embedding and
    vector search per hybrid query)."""
    search_vector_feedback_weight: float = Field(default=0.5, ge=0.0, le=10.0)
    """The expanded query's ranking against the question's own (1.0), merged by RRF."""
    search_participant_boost: float = Field(default=0.5, ge=0.0, le=10.0)
    """A query naming an entry's speaker multiplies the entry's fused score by 1 + this, in
    both channels' candidates (0: off)."""
    analyzer_language: str | None = "english"
    """Snowball stemmer language (`none` disables stemming)."""
    analyzer_drop_query_stopwords: bool = True
    """Drop English function words from queries (never from the index, and never when the
    query has nothing else)."""
    analyzer_strip_clitics: bool = False
    """English and porter analyzers: drop 's, 't, 're, 've, 'll, 'd, 'm after an apostrophe
    in entries and queries alike (new writes; older entries keep their tokens)."""
    max_batch_entries: int = Field(default=50_000, ge=1, le=1_000_000)
    embedding_batch_size: int = Field(default=64, ge=1, le=4096)
    index_template: str = "{text}"
    """What the search channels index per entry: {text}, {kind} and {metadata[KEY]}, for
    example `{text}\n{metadata[date]}`. Missing keys render as nothing; stored text is never
    changed. Applies to writes after the change (old entries keep their index)."""
    index_context_before: int = Field(default=2, ge=0, le=16)
    """Contextual indexing: neighbouring entries of the same thread (in write order, whether
    written in one batch or one call at a time) before each entry that the channels see with
    it; 0 with `after` 0 turns it off. Entries without a thread get none unless
    `index_context_group_key` is set."""
    index_context_after: int = Field(default=2, ge=0, le=16)
    index_context_group_key: str | None = None
    """For entries without a thread: a metadata key that groups neighbours within one write
    batch (a conversation, session or document id); unset: no neighbours."""
    index_context_fts: bool = True
    """With context on: add the neighbours' words to the full-text index."""
    index_context_vector: bool = True
    """With context on: mix the neighbourhood's vector into the entry's vector."""
    index_context_neighbour_chars: int = Field(default=512, ge=1, le=65_536)
    index_speaker_key: str | None = "speaker"
    """Metadata key naming who said or wrote an entry (a participant of its thread); its words
    are indexed as the speaker field. Unset or blank: no speaker field."""
    index_event_date: bool = True
    """Append an entry's `occurred_at` (when the writer gave one) to what both channels index,
    as words such as `8 May 2023`. Entries without it index as before."""

    @field_validator("memory_rerank_candidate_limits_by_class")
    @classmethod
    def _known_classes(cls, value: dict[str, int]) -> dict[str, int]:
        return validate_class_limits(value)

    @field_validator("index_template")
    @classmethod
    def _valid_template(cls, value: str) -> str:
        from powercontext.memory.indexing.templates import validate_template

        # Environment values cannot carry a newline easily: accept the two-character `\n`.
        return validate_template(value.replace("\\n", "\n"))

    @field_validator("index_context_group_key", "index_speaker_key", mode="before")
    @classmethod
    def _blank_group_key(cls, value: Any) -> Any:
        return blank_to_none(value)

    @field_validator("analyzer_language", mode="before")
    @classmethod
    def _none_language(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "none", "off"):
            return None
        return value

    @field_validator("analyzer_language")
    @classmethod
    def _known_language(cls, value: str | None) -> str | None:
        if value is None:
            return None
        import Stemmer

        if value not in Stemmer.algorithms():
            raise ValueError(
                f"unknown stemmer language {value!r}; use one of {Stemmer.algorithms()}"
            )
        return value
