"""ISO-8601-only times on PostgreSQL give the answers they give on SQLite: the same stored
`occurred_at` for every accepted form, the same filter results at exact boundaries, the same
refusal of numbers (HTTP and the CLI), and an export keeps `occurred_at` to the microsecond
through SQLite -> PostgreSQL -> SQLite.

One live server per backend for the module (PostgreSQL: one schema of the session's server);
tests isolate themselves by scope."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig, ServerSettings
from powercontext.server import create_app
from tests import pg_server
from tests.http.live import live_server
from tests.integration.test_audit_reindex_cli import _env

pytestmark = pytest.mark.postgres

BACKENDS = ("sqlite", "postgres")
# (sent, stored in UTC): every form pydantic reads as ISO 8601, at the edges a text compare
# or a time zone conversion could get wrong (no fraction vs a fraction, pre-epoch, years 1
# and 9999, a day boundary crossed by the offset).
SENT = [
    ("2023-05-08T13:56:00Z", "2023-05-08T13:56:00Z"),
    ("2023-05-08T13:56:00z", "2023-05-08T13:56:00Z"),
    ("2023-05-08T13:56:00+02:00", "2023-05-08T11:56:00Z"),
    ("2023-05-08T13:56:00.250-01:30", "2023-05-08T15:26:00.250000Z"),
    ("2023-05-08T13:56:00.000001Z", "2023-05-08T13:56:00.000001Z"),
    ("2023-05-08T13:56:00.999999+00:00", "2023-05-08T13:56:00.999999Z"),
    ("2023-05-08T23:30:00-05:00", "2023-05-09T04:30:00Z"),
    ("2023-05-08 13:56", "2023-05-08T13:56:00Z"),
    ("2023-05-08T13:56:00", "2023-05-08T13:56:00Z"),
    ("2023-05-08", "2023-05-08T00:00:00Z"),
    ("1969-12-31T23:59:59.999999Z", "1969-12-31T23:59:59.999999Z"),
    ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
    ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
]
NOT_TIMES: list[Any] = [20240101, 1.5, True, "1700000000", "-1"]


def settings(url: str, embedding: str = "none") -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=url),
        inference=InferenceConfig(embedding_model=embedding),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=0),
    )


def database_urls(workdir: Path) -> dict[str, str]:
    """A SQLite file and a PostgreSQL schema, both in (or named after) `workdir`."""
    return {
        "sqlite": f"sqlite:///{workdir / 'memory.db'}",
        "postgres": asyncio.run(pg_server.database_url(workdir)),
    }


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return database_urls(tmp_path_factory.mktemp("pgparity-times"))


@pytest.fixture(scope="module")
def http(databases: dict[str, str]) -> Iterator[dict[str, httpx.Client]]:
    """A client of a live server on each backend's database."""
    with (
        live_server(create_app(settings(databases["sqlite"]))) as lite,
        live_server(create_app(settings(databases["postgres"]))) as pg,
        httpx.Client(base_url=lite.url, timeout=30) as lite_client,
        httpx.Client(base_url=pg.url, timeout=30) as pg_client,
    ):
        yield {"sqlite": lite_client, "postgres": pg_client}


@pytest.fixture
def scope() -> str:
    return f"s-{uuid.uuid4().hex[:10]}"


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _listed(client: httpx.Client, scope: str, where: dict[str, Any] | None = None) -> Any:
    body: dict[str, Any] = {"scope_id": scope, "limit": 1000}
    if where is not None:
        body["filter"] = where
    return _ok(client.post("/v1/memory/entries/list", json=body))["entries"]


def _answer(client: httpx.Client, scope: str, where: dict[str, Any]) -> list[str]:
    """The texts a filter finds, by listing and by a full-text search (they must agree)."""
    listed = sorted(e["text"] for e in _listed(client, scope, where))
    search = {"scope_id": scope, "query": "heron", "mode": "fts", "limit": 100, "filter": where}
    found = sorted(
        hit["text"] for hit in _ok(client.post("/v1/memory/search", json=search))["hits"]
    )
    assert found == listed, (where, found, listed)
    return listed


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def test_every_iso_form_is_stored_as_the_same_utc_time(
    http: dict[str, httpx.Client], scope: str
) -> None:
    entries = [{"text": f"heron {i}", "occurred_at": sent} for i, (sent, _) in enumerate(SENT)]
    for client in http.values():
        _ok(client.post("/v1/memory/remember", json={"scope_id": scope, "entries": entries}))
    expected = {f"heron {i}": stored for i, (_, stored) in enumerate(SENT)}
    for backend, client in http.items():  # read back from the store, not the write's echo
        stored = {e["text"]: e["occurred_at"] for e in _listed(client, scope)}
        assert stored == expected, backend


def test_filters_give_the_same_answers_at_exact_boundaries(
    http: dict[str, httpx.Client], scope: str
) -> None:
    entries = [{"text": f"heron {i}", "occurred_at": sent} for i, (sent, _) in enumerate(SENT)]
    entries.append({"text": "heron undated"})  # occurred_* falls back to its write time
    for client in http.values():
        _ok(client.post("/v1/memory/remember", json={"scope_id": scope, "entries": entries}))
    # A second revision, so created_* has a boundary inside the scope.
    later = [{"text": "heron later", "occurred_at": "2023-05-08T13:56:00.000001+00:00"}]
    created = {}
    for backend, client in http.items():
        wrote = _ok(client.post("/v1/memory/remember", json={"scope_id": scope, "entries": later}))
        created[backend] = wrote["entries"][0]["created_at"]
    bounds = [stored for _, stored in SENT] + [
        "2023-05-08T15:56:00+02:00",  # 13:56:00Z, written with an offset
        "2023-05-08T13:56:00.0000005Z",  # below a microsecond
        "2023-05-09T00:00:00+14:00",
        "1970-01-01T00:00:00Z",
    ]
    for bound in bounds:
        for field in ("occurred_after", "occurred_before"):
            answers = {b: _answer(c, scope, {field: bound}) for b, c in http.items()}
            assert answers["sqlite"] == answers["postgres"], (field, bound, answers)
        window = {"occurred_after": bound, "occurred_before": "2023-05-09T04:30:00.000001Z"}
        answers = {b: _answer(c, scope, window) for b, c in http.items()}
        assert answers["sqlite"] == answers["postgres"], (window, answers)
    # Independent of either store: what the stored times say.
    sqlite = http["sqlite"]
    assert _answer(sqlite, scope, {"occurred_after": "2023-05-08T13:56:00.000001Z"}) == sorted(
        ["heron 4", "heron 5", "heron 3", "heron 6", "heron 12", "heron later", "heron undated"]
    )
    assert _answer(sqlite, scope, {"occurred_before": "2023-05-08T13:56:00.000001Z"}) == sorted(
        ["heron 0", "heron 1", "heron 2", "heron 7", "heron 8", "heron 9", "heron 10", "heron 11"]
    )
    for backend, client in http.items():  # each store's own write time is its boundary
        at = created[backend]
        offset = _utc(at).astimezone(timezone(timedelta(hours=-9, minutes=-30))).isoformat()
        for bound in (at, offset):
            assert _answer(client, scope, {"created_after": bound}) == ["heron later"], backend
            before = _answer(client, scope, {"created_before": bound})
            assert len(before) == len(entries) and "heron later" not in before, backend


def _refusal(response: httpx.Response) -> tuple[int, Any]:
    return response.status_code, response.json()


@pytest.mark.parametrize("value", NOT_TIMES)
def test_a_number_is_refused_alike_and_nothing_is_written(
    http: dict[str, httpx.Client], scope: str, value: Any
) -> None:
    said = {}
    for backend, client in http.items():
        one = client.post(
            "/v1/memory/remember", json={"scope_id": scope, "text": "x", "occurred_at": value}
        )
        where = {"scope_id": scope, "query": "x", "filter": {"created_after": value}}
        search = client.post("/v1/memory/search", json=where)
        listed = client.post(
            "/v1/memory/entries/list",
            json={"scope_id": scope, "filter": {"occurred_before": value}},
        )
        said[backend] = [_refusal(one), _refusal(search), _refusal(listed)]
        head = _ok(client.post("/v1/memory/head", json={"scope_id": scope}))
        assert head["memory_ref"] is None, backend
    # A naive filter time is refused (a stored naive occurred_at is read as UTC, a bound not).
    naive = {"scope_id": scope, "filter": {"occurred_after": "2023-05-08T11:00:00"}}
    for backend, client in http.items():
        said[backend].append(_refusal(client.post("/v1/memory/entries/list", json=naive)))
    assert said["sqlite"] == said["postgres"]
    assert "need a time zone" in said["postgres"][-1][1]["error"]["message"]
    del said["postgres"][-1]
    assert all(status == 422 for status, _ in said["postgres"])
    assert all("ISO 8601" in body["error"]["message"] for _, body in said["postgres"])


def _cli(url: str, *args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "powercontext.cli", "memory", *args, "--local"],
        env=_env(url, POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL="none"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


def test_the_cli_takes_and_refuses_the_same_times_on_both(
    databases: dict[str, str], scope: str
) -> None:
    for url in databases.values():
        code, out, err = _cli(
            url, "remember", "heron late", "-s", scope, "--occurred-at", SENT[6][0]
        )
        assert code == 0, err
    answers = {}
    for backend, url in databases.items():
        refusals = [
            _cli(url, "remember", "x", "-s", scope, "--occurred-at", "1700000000"),
            _cli(url, "list", "-s", scope, "--filter", '{"occurred_after": 20240101}'),
        ]
        code, out, err = _cli(
            url,
            "list",
            "-s",
            scope,
            "--json",
            "--filter",
            '{"occurred_after": "2023-05-09T00:00:00Z"}',
        )
        assert code == 0, err
        listed = [(e["text"], e["occurred_at"]) for e in json.loads(out)["entries"]]
        assert listed == [("heron late", "2023-05-09T04:30:00Z")], backend
        code, out, err = _cli(
            url,
            "list",
            "-s",
            scope,
            "--json",
            "--filter",
            '{"occurred_before": "2023-05-09T00:00:00Z"}',
        )
        assert (code, json.loads(out)["entries"]) == (0, []), backend
        answers[backend] = refusals
    assert answers["sqlite"] == answers["postgres"]
    for code, out, err in answers["postgres"]:
        assert (code, out) == (1, "") and "ISO 8601" in err and "not a number" in err, err
