"""The issue's full figures: 1,000 searches from 32 tasks with a 20-50 ms reranker and two
concurrent writers, and 50 kills per backend. Opt-in (see conftest.py); minutes, not seconds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests import pg_server
from tests.reliability.bench_scripts import load

soak = load("soak")
crash_safety = load("crash_safety")

pytestmark = pytest.mark.slow


async def test_full_soak_sqlite(tmp_path: Path) -> None:
    figures = await soak.soak(f"sqlite:///{tmp_path / 'soak.db'}", searches=1000, tasks=32)
    assert figures["error_count"] == 0, figures["errors"]
    assert figures["searches"] == 1000 and figures["distinct_revisions_searched"] > 1


@pytest.mark.postgres
async def test_full_soak_postgres(tmp_path: Path) -> None:
    url = await pg_server.database_url(tmp_path)
    figures = await soak.soak(url, searches=1000, tasks=32)
    assert figures["error_count"] == 0, figures["errors"]
    assert figures["searches"] == 1000 and figures["distinct_revisions_searched"] > 1


def test_fifty_kills_sqlite(tmp_path: Path) -> None:
    summary = crash_safety.run_kills(f"sqlite:///{tmp_path / 'memory.db'}", tmp_path, kills=50)
    assert summary["problems"] == [] and summary["kills"] == 50


@pytest.mark.postgres
async def test_fifty_kills_postgres(tmp_path: Path) -> None:
    url = await pg_server.database_url(tmp_path)
    summary = await asyncio.to_thread(crash_safety.run_kills, url, tmp_path, kills=50)
    assert summary["problems"] == [] and summary["kills"] == 50
