"""The operations side of a real server: stop signal, logs, metrics labels, readiness faults.

An operator's view: `server run` stopped by SIGTERM exits 0 with the database closed, its JSON
log carries no query, memory text or key, `/metrics` parses and keeps its label sets bounded
whatever paths, methods and scopes clients send, and `/v1/ready` says 503 quickly when the
database hangs or its SQLite file was swapped out from under the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.memory.models import RememberMemoryRequest
from powercontext.runtime import open_runtime
from powercontext.server import create_app
from powercontext.server.readiness import ReadinessProbe
from tests.http.processes import start_server, wait_until_healthy

KEY = "ops-key-7Q2xVb-secret"
MEMORY_MARKER = "zorblatt-memory-marker"
QUERY_MARKER = "quuxquery-marker"
WRONG_KEY = "wrong-key-Hk3p-marker"


def _series(text: str) -> list[tuple[str, dict[str, str]]]:
    return [
        (sample.name, sample.labels)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def test_sigterm_exits_0_closed_and_the_log_and_metrics_leak_nothing(tmp_path: Path) -> None:
    db = tmp_path / "ops.db"
    env = os.environ | {
        "POWERCONTEXT_SERVER_DATABASE_URL": f"sqlite:///{db}",
        "POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL": "hash",
        "POWERCONTEXT_SERVER_LOG_FORMAT": "json",
        "POWERCONTEXT_SERVER_HTTP_API_KEYS": json.dumps({KEY: ["*"]}),
    }
    process, url = start_server(env)
    try:
        wait_until_healthy(process, url)
        keyed = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=url, timeout=30) as client:
            wrote = client.post(
                "/v1/memory/remember",
                json={"scope_id": "ops", "text": f"{MEMORY_MARKER} lives here"},
                headers=keyed,
            )
            assert wrote.status_code == 200
            found = client.post(
                "/v1/memory/search",
                json={"scope_id": "ops", "query": f"{QUERY_MARKER} {MEMORY_MARKER}"},
                headers=keyed,
            )
            assert found.status_code == 200 and found.json()["hits"]
            refused = client.post(
                "/v1/memory/search",
                json={"scope_id": "ops", "query": QUERY_MARKER},
                headers={"Authorization": f"Bearer {WRONG_KEY}"},
            )
            assert refused.status_code == 401
            for _ in range(20):  # unbounded values: paths, scope ids, entry ids
                client.get(f"/v1/x/{uuid.uuid4().hex}")
                client.post(
                    "/v1/memory/search",
                    json={"scope_id": f"s-{uuid.uuid4().hex}", "query": "anything"},
                    headers=keyed,
                )
                client.post(
                    "/v1/memory/entries/by-id",
                    json={"scope_id": "ops", "entry_id": uuid.uuid4().hex},
                    headers=keyed,
                )
            scraped = client.get("/metrics")
            assert client.get("/v1/ready").status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        _, stderr = process.communicate(timeout=20)
        stopped_in = time.monotonic() - started

    # uvicorn re-raises SIGTERM after its shutdown, which ended the process (-15, 143 in a
    # shell) before the runtime and its database were closed.
    assert process.returncode == 0, stderr
    assert stopped_in < 10  # the graceful timeout; an idle server has nothing to wait for
    assert not Path(f"{db}-wal").exists(), "the database was not closed"

    lines = stderr.splitlines()
    assert lines and all(line.startswith("{") for line in lines), lines
    records = [json.loads(line) for line in lines]
    assert any(r["logger"].startswith("uvicorn") for r in records)  # same formatter
    access = [r for r in records if r["logger"] == "powercontext.http.access"]
    assert {"request_id", "route", "status", "latency_ms"} <= set(access[0])
    for secret in (MEMORY_MARKER, QUERY_MARKER, KEY, WRONG_KEY, "/v1/x/"):
        assert secret not in stderr, secret

    assert scraped.status_code == 200
    series = _series(scraped.text)
    routes = {labels["route"] for _, labels in series if "route" in labels}
    assert routes <= {
        "/v1/health",
        "/v1/ready",
        "/metrics",
        "/v1/memory/remember",
        "/v1/memory/search",
        "/v1/memory/entries/by-id",
        "unmatched",
    }, routes
    values = {value for _, labels in series for value in labels.values()}
    assert not any(MEMORY_MARKER in v or v.startswith("s-") for v in values)
    assert len(series) < 300  # 60 distinct ids above; none of them made a series


async def test_metrics_count_unknown_methods_under_one_label(tmp_path: Path) -> None:
    settings = ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'm.db'}"),
        inference=InferenceConfig(embedding_model="none"),
    )
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        for _ in range(25):  # h11 (the fallback parser) passes any token method through
            await client.request(f"X{uuid.uuid4().hex[:10].upper()}", "/v1/health")
        text = (await client.get("/metrics")).text
    methods = {labels["method"] for _, labels in _series(text) if "method" in labels}
    assert methods == {"other"}, methods  # the scrape itself is counted after it renders


def _settings(db: Path) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{db}"),
        inference=InferenceConfig(embedding_model="hash"),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=0),
    )


async def test_ready_costs_one_timeout_when_the_database_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def hang(*_: object) -> None:
        await asyncio.sleep(60)

    async with open_runtime(_settings(tmp_path / "r.db")) as runtime:
        probe = ReadinessProbe(runtime, timeout=0.4)
        assert (await probe.check()).status == "ready"
        # What a stopped PostgreSQL does: every read waits for a pooled connection.
        monkeypatch.setattr(runtime.store, "head", hang)
        monkeypatch.setattr(runtime.store, "scope_ids", hang)
        monkeypatch.setattr(runtime.memory.profiles, "stale_scopes", hang)
        started = time.monotonic()
        report = await probe.check()
        took = time.monotonic() - started
    assert report.status == "not_ready"
    assert not report.checks["database"].ok
    assert "TimeoutError" in report.checks["database"].detail
    assert took < 0.75, f"{took:.2f} s: the checks waited one after another"


async def test_ready_fails_when_the_sqlite_file_is_deleted_or_replaced(tmp_path: Path) -> None:
    db = tmp_path / "swap.db"
    async with open_runtime(_settings(db)) as runtime:
        probe = ReadinessProbe(runtime)
        await runtime.memory.for_scope("s").remember(RememberMemoryRequest(text="kept"))
        assert (await probe.check()).status == "ready"
        db.rename(tmp_path / "moved.db")
        gone = await probe.check()
        (tmp_path / "other.db").write_bytes(b"")
        (tmp_path / "other.db").rename(db)
        replaced = await probe.check()
        (tmp_path / "moved.db").replace(db)  # the same file back: ready again
        back = await probe.check()
    for report in (gone, replaced):
        assert report.status == "not_ready"
        assert "deleted or replaced" in report.checks["database"].detail
    assert back.status == "ready"
