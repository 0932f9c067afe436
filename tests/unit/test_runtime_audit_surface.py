"""The public surface: what the docs import is there, and every public name, method and
property of `powercontext` and `powercontext.memory` says what it does."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import powercontext
import powercontext.memory
from powercontext.memory.service import MemoryService

DOCUMENTED_IMPORTS = ["Runtime", "ServerSettings", "open_runtime", "__version__"]
ROOT = Path(inspect.getfile(powercontext)).parent
OUTSIDE = {"powercontext.ServerSettings"}
"""Defined in powercontext.config, which documents its settings field by field."""


def test_the_names_the_docs_import_are_exported_and_listed() -> None:
    for name in DOCUMENTED_IMPORTS:
        assert getattr(powercontext, name) is not None
        assert name in dir(powercontext)
    assert (ROOT / "py.typed").is_file()


def _public() -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    owners = [(f"powercontext.{n}", getattr(powercontext, n)) for n in powercontext.__all__]
    owners += [
        (f"powercontext.memory.{n}", getattr(powercontext.memory, n))
        for n in powercontext.memory.__all__
    ]
    owners.append(("MemoryService", MemoryService))
    for label, owner in owners:
        if label in OUTSIDE or not (inspect.isclass(owner) or inspect.isfunction(owner)):
            continue
        items.append((label, owner))
        if not inspect.isclass(owner):
            continue
        for name, member in vars(owner).items():
            if name.startswith("_") or name.startswith("model_"):
                continue
            target = member.fget if isinstance(member, property) else member
            if inspect.isfunction(target):
                items.append((f"{label}.{name}", target))
    return items


@pytest.mark.parametrize(("label", "item"), _public(), ids=[label for label, _ in _public()])
def test_every_public_name_has_a_docstring(label: str, item: Any) -> None:
    own = item.__dict__.get("__doc__") if inspect.isclass(item) else item.__doc__
    assert own and own.strip(), f"{label} has no docstring"
