"""The full soaks run only when asked for: `pytest -m slow tests/soak` or POWERCONTEXT_SOAK=1.

They take minutes on a small machine, so the default `pytest` run collects and skips them.
"""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    asked = "slow" in (config.getoption("markexpr") or "") or os.environ.get("POWERCONTEXT_SOAK")
    if asked:
        return
    skip = pytest.mark.skip(reason="slow: run with `pytest -m slow` (the full soaks: tests/soak)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)
