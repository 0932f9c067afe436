"""The LoCoMo harness (Maharana et al., ACL 2024): `powercontext bench locomo`.

It configures and observes PowerContext only through `open_runtime` or the SDK; it never
constructs a reranker or reorders hits (the RFC's evaluation boundary).
"""

from powercontext.bench.locomo.dataset import (
    CATEGORY_NAMES,
    SCORED_CATEGORIES,
    Conversation,
    Dataset,
    DatasetError,
    QAItem,
    load_dataset,
)
from powercontext.bench.locomo.runner import RunConfig, RunOutputs, run_locomo

__all__ = [
    "CATEGORY_NAMES",
    "SCORED_CATEGORIES",
    "Conversation",
    "Dataset",
    "DatasetError",
    "QAItem",
    "RunConfig",
    "RunOutputs",
    "load_dataset",
    "run_locomo",
]
