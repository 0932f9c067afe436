"""docs/mcp.md's tool table names every tool the server lists, with its real models.

The table is what a user reads to learn the tools; it had fallen behind the operations table
(a tool missing, an output model that does not exist). Also: the links of the pages audited
with it resolve, anchors included.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from powercontext.server.mcp_tools import MEMORY_TOOLS

ROOT = Path(__file__).resolve().parents[2]
_ROW = re.compile(r"^\| `(\w+)`\s*\|.*\| `(\w+)`[^|]*-> `(\w+)`[^|]*\|\s*$", re.MULTILINE)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#+\s+(.*)$", re.MULTILINE)


def _documented(text: str) -> dict[str, tuple[str, str]]:
    return {name: (request, response) for name, request, response in _ROW.findall(text)}


def _listed() -> dict[str, tuple[str, str]]:
    return {tool.name: (tool.request.__name__, tool.response.__name__) for tool in MEMORY_TOOLS}


def test_the_tool_table_matches_the_listed_tools() -> None:
    documented = _documented((ROOT / "docs" / "mcp.md").read_text(encoding="utf-8"))
    assert documented == _listed()


def test_the_check_sees_a_missing_tool_and_a_wrong_model() -> None:
    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `head`"))
    assert _documented(text.replace(row + "\n", "")) != _listed()
    wrong = text.replace("-> `HeadResponse`", "-> `HeadModel`")
    assert _documented(wrong) != _listed()


def _anchor(heading: str) -> str:
    # GitHub's rule: lower case, punctuation other than - and _ dropped, spaces to dashes.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


PAGES = [
    "mcp",
    "inspector",
    "reliability",
    "storage",
    "postgres",
    "locomo",
    "integrations",
    "testing",
    "rerank",
]


@pytest.mark.parametrize("page", PAGES)
def test_links_resolve(page: str) -> None:
    source = ROOT / "docs" / f"{page}.md"
    broken = []
    for link in _LINK.findall(source.read_text(encoding="utf-8")):
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, fragment = link.partition("#")
        target = (source.parent / path) if path else source
        if not target.exists():
            broken.append(link)
        elif fragment and target.suffix == ".md":
            headings = _HEADING.findall(target.read_text(encoding="utf-8"))
            if fragment not in {_anchor(heading) for heading in headings}:
                broken.append(link)
    assert broken == []
