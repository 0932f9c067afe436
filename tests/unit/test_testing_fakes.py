"""`powercontext.testing`: importable without test tools or extras, and its docs run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from powercontext.testing import FakeEmbedder, ScriptedReranker

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
# Test tools and the packages of the optional extras (see pyproject.toml).
NOT_AT_IMPORT = {
    "pytest",
    "hypothesis",
    "onnxruntime",
    "tokenizers",
    "psycopg",
    "hnswlib",
    "langchain_core",
    "matplotlib",
}


def test_importing_it_loads_no_test_tool_and_no_extra() -> None:
    code = "import sys, powercontext.testing; print(' '.join(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert {name.split(".")[0] for name in loaded} & NOT_AT_IMPORT == set()


@pytest.mark.parametrize(
    "example", re.findall(r"```python\n(.*?)```", DOCS.read_text("utf-8"), re.S)
)
def test_the_docs_examples_run(example: str) -> None:
    exec(compile(example, str(DOCS), "exec"), {"__name__": "docs_example"})


async def test_the_fake_embedder_fails_only_what_it_is_told_and_counts_calls() -> None:
    embedder = FakeEmbedder(8, fail_queries=True)
    assert len((await embedder.embed_documents(["a b"]))[0]) == 8
    with pytest.raises(ConnectionError, match="provider down"):
        await embedder.embed_query("a")
    assert (embedder.document_calls, embedder.query_calls, embedder.calls) == (1, 1, 2)


async def test_the_scripted_reranker_raises_its_error_until_it_is_cleared() -> None:
    reranker = ScriptedReranker(error=TimeoutError("slow"))
    with pytest.raises(TimeoutError):
        await reranker.rerank("q", (), 3)
    reranker.error = None
    decision = await reranker.rerank("q", (), 3)
    assert decision.selected_ranks == () and reranker.calls == [("q", 0, 3), ("q", 0, 3)]
