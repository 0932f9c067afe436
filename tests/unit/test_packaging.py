"""The install a new user runs: a distribution name of our own, no compiler for the default
install, and no instruction anywhere that installs the unrelated `powercontext` project."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTION = "powercontext-memory"
# `pip install powercontext`, `'powercontext[local]'`, `powercontext==1.0`: the other project.
WRONG_INSTALL = re.compile(r"pip install[^\n`&;|]*?(?<![\w./-])['\"]?powercontext(?![\w-])")


def _project() -> dict[str, object]:
    return dict(tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"])


def test_distribution_name_is_ours_and_the_command_is_powercontext() -> None:
    project = _project()
    assert project["name"] == DISTRIBUTION
    assert project["scripts"] == {"powercontext": "powercontext.cli:main"}


def test_hnswlib_is_an_extra_that_dev_includes() -> None:
    project = _project()
    defaults = [str(d) for d in project["dependencies"]]  # type: ignore[attr-defined]
    assert not [d for d in defaults if d.lower().startswith("hnswlib")]
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    assert any(d.startswith("hnswlib") for d in extras["hnsw"])
    (self_reference,) = [d for d in extras["dev"] if d.startswith(DISTRIBUTION)]
    included = set(self_reference.split("[")[1].rstrip("]").split(","))
    assert included == set(extras) - {"dev"}


def test_no_install_instruction_names_the_unrelated_project() -> None:
    files = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "src").rglob("*.py")]
    offending = [
        f"{path.relative_to(REPO)}: {match.group(0)}"
        for path in files
        for match in WRONG_INSTALL.finditer(path.read_text("utf-8"))
    ]
    assert offending == []
