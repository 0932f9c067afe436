"""Fakes for your own tests of code that uses PowerContext: no model, no network, no pytest.

- `FakeEmbedder`: deterministic vectors (the hashing embedder) that can fail like an outage.
- `ScriptedReranker`, `QueryScriptedReranker`: rerankers whose answers the test decides.
- `FakeRerankEndpoint`: a loopback `POST /rerank` server (Cohere, Jina and TEI shapes).

See docs/testing.md for examples.
"""

from powercontext.testing.embedders import FakeEmbedder
from powercontext.testing.rerank_endpoint import FakeRerankEndpoint, overlap_scores
from powercontext.testing.rerankers import QueryScriptedReranker, ScriptedReranker

__all__ = [
    "FakeEmbedder",
    "FakeRerankEndpoint",
    "QueryScriptedReranker",
    "ScriptedReranker",
    "overlap_scores",
]
