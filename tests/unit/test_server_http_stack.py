"""`server run` uses httptools and uvloop when they import, h11 and asyncio otherwise."""

from __future__ import annotations

import sys

import pytest

from powercontext.config import ServerSettings
from powercontext.server import runner


def test_the_c_parser_and_loop_when_installed() -> None:
    options = runner._uvicorn_options(ServerSettings.model_construct())
    assert (options["http"], options["loop"]) == ("httptools", "uvloop")
    assert runner._loop_factory() is not None


def test_pure_python_fallback_without_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import name` raise ImportError.
    monkeypatch.setitem(sys.modules, "httptools", None)
    monkeypatch.setitem(sys.modules, "uvloop", None)
    options = runner._uvicorn_options(ServerSettings.model_construct())
    assert (options["http"], options["loop"]) == ("h11", "asyncio")
    assert runner._loop_factory() is None
