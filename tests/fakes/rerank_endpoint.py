"""Moved to `powercontext.testing.rerank_endpoint`; kept so existing imports keep working."""

from powercontext.testing.rerank_endpoint import FakeRerankEndpoint, overlap_scores

__all__ = ["FakeRerankEndpoint", "overlap_scores"]
