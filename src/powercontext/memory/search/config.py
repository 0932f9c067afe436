"""The search settings of a MemoryService: one frozen record per deployment.

The defaults here are the library's (feedback off); the server's come from its settings
(`runtime.search_config`), which turn on what was measured to help (docs/search-quality.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.search.analyze import AnalyzerConfig
from powercontext.memory.search.candidates import CandidatePolicy
from powercontext.memory.search.feedback import FeedbackConfig
from powercontext.memory.search.fields import FieldWeights
from powercontext.memory.search.fusion import RrfConfig
from powercontext.memory.search.vector_feedback import VectorFeedbackConfig


@dataclass(frozen=True, slots=True)
class SearchConfig:
    candidate_limit: int = 30
    min_similarity: float = 0.3
    fusion: RrfConfig = field(default_factory=RrfConfig)
    """Reciprocal Rank Fusion of the two channels (search.fusion)."""
    analyzer: AnalyzerConfig = field(default_factory=AnalyzerConfig)
    max_batch_entries: int = 50_000
    embedding_batch_size: int = 64
    participant_boost: float = 0.0
    """A query naming an entry's speaker multiplies its fused score by 1 + this (0: off)."""
    fts_common_term_entries: int = 5_000
    """Full-text terms held by more than this many entries of the scope only add to the
    scores of entries found through rarer terms (FtsQuery.common_term_entries; 0: off)."""
    fields: FieldWeights = field(default_factory=FieldWeights)
    """Weights of the neighbour and speaker fields in the full-text channel (search.fields)."""
    feedback: FeedbackConfig = field(default_factory=lambda: FeedbackConfig(docs=0))
    """Pseudo-relevance feedback in the full-text channel (search.feedback); off here,
    on in the server's settings."""
    vector_feedback: VectorFeedbackConfig = field(default_factory=VectorFeedbackConfig)
    """Query expansion in the vector channel (search.vector_feedback); off unless set."""
    index: IndexTextConfig = field(default_factory=IndexTextConfig)
    """What the channels index per entry: template and contextual neighbours."""
    timeout_seconds: float | None = None
    """The search's deadline from its start; the rerank stage ends before it (rerank guard)."""
    candidates: CandidatePolicy = field(default_factory=CandidatePolicy)
    """How large a coarse pool the reranker sees: fixed, or by query class."""
    rerank_concurrency: int = 2
    """Reranks of one batch search in flight at once (the generation request bound)."""
    max_batch_queries: int = 64
