"""The in-process examples of README.md and docs/*.md run as written.

Every ```python block that opens a runtime is executed, on a temporary SQLite file without an
embedding model (top-level `await`, as in `python -m asyncio`, is allowed). The one that
starts a local model (docs/rerank.md) runs only where that model is installed. Fragments that
do not open a runtime (an SDK call, a line of a larger program) are not programs to run.
"""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

import pytest

from tests.local_model import requires_local_model

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _runtime_examples() -> list[tuple[str, str]]:
    examples = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            code = match.group(1)
            if "open_runtime(" in code and "import " in code:
                line = text.count("\n", 0, match.start()) + 1
                examples.append((f"{page.relative_to(ROOT)}:{line}", code))
    return examples


EXAMPLES = _runtime_examples()
_LOCAL_MODEL = "LlamaCppServer.start("


def test_the_examples_are_found() -> None:
    # README's first memory, the two testing.md programs and the local-model one at least.
    assert len(EXAMPLES) >= 4
    assert any(where.startswith("README.md") for where, _ in EXAMPLES)


def _run(where: str, code: str) -> None:
    compiled = compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, {"__name__": "__main__"})
    if asyncio.iscoroutine(result):
        asyncio.run(result)


@pytest.mark.parametrize(
    ("where", "code"),
    [example for example in EXAMPLES if _LOCAL_MODEL not in example[1]],
    ids=lambda value: value if ".md:" in value else "",
)
def test_in_process_example_runs_as_written(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / 'memory.db'}")
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL", "none")
    _run(where, code)


@requires_local_model
@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "code"),
    [example for example in EXAMPLES if _LOCAL_MODEL in example[1]],
    ids=lambda value: value if ".md:" in value else "",
)
def test_local_model_example_runs_as_written(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{tmp_path / 'memory.db'}")
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL", "none")
    _run(where, code)
