"""Export files into and out of PostgreSQL, through the CLI as an operator moves a scope:
the ISO times of an import file are stored as on SQLite, a number in one is refused alike,
and SQLite -> PostgreSQL -> SQLite keeps every `occurred_at` to the microsecond, in UTC."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from powercontext import open_runtime
from powercontext.memory import RememberMemoryRequest
from powercontext.memory.transfer import FORMAT
from tests.integration.test_audit_pgparity_times import SENT, _cli, database_urls, settings

pytestmark = pytest.mark.postgres

# Event times with microseconds in several zones, and none (the write time is exported).
WHEN: list[datetime | None] = [
    datetime(2023, 5, 8, 13, 56, 7, 123456, tzinfo=timezone(timedelta(hours=5, minutes=45))),
    datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2024, 2, 29, 23, 30, 0, 1, tzinfo=timezone(timedelta(hours=-9, minutes=-30))),
    datetime(2023, 5, 8, 13, 56, 7, tzinfo=UTC),
    None,
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pgparity-transfer")


@pytest.fixture(scope="module")
def databases(workdir: Path) -> dict[str, str]:
    urls = database_urls(workdir)
    urls["sqlite-back"] = f"sqlite:///{workdir / 'back.db'}"
    return urls


@pytest.fixture
def scope() -> str:
    return f"s-{uuid.uuid4().hex[:10]}"


def _ok(url: str, *args: str) -> str:
    code, out, err = _cli(url, *args)
    assert code == 0, err
    return out


def _entries(url: str, scope: str) -> dict[str, str]:
    """Each entry's `occurred_at` as the wire writes it, by text."""

    async def read() -> dict[str, str]:
        async with open_runtime(settings(url)) as runtime:
            page = await runtime.memory.for_scope(scope).list(limit=1000)
        return {e.text: e.model_dump(mode="json")["occurred_at"] for e in page.entries}

    return asyncio.run(read())


def _file(path: Path, entries: list[dict[str, Any]]) -> Path:
    header = {
        "format": FORMAT,
        "version": 1,
        "scope_id": "elsewhere",
        "revision": 1,
        "entry_count": len(entries),
        "exported_at": "2024-05-01T00:00:00+02:00",
    }
    lines = [header] + [
        {"entry_id": f"e{i}", "kind": "fact", "text": f"t{i}", "metadata": {}, **entry}
        for i, entry in enumerate(entries)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_an_import_file_with_iso_times_is_stored_alike(
    databases: dict[str, str], scope: str, tmp_path: Path
) -> None:
    source = _file(tmp_path / "in.jsonl", [{"occurred_at": sent} for sent, _ in SENT])
    stored = {}
    for backend in ("sqlite", "postgres"):
        _ok(databases[backend], "import", str(source), "-s", scope)
        stored[backend] = _entries(databases[backend], scope)
    assert stored["postgres"] == {f"t{i}": utc for i, (_, utc) in enumerate(SENT)}
    assert stored["sqlite"] == stored["postgres"]


@pytest.mark.parametrize("entry", [{"occurred_at": "20240101"}, {"created_at": 1700000000}])
def test_a_number_in_an_import_file_is_refused_alike(
    databases: dict[str, str], scope: str, tmp_path: Path, entry: dict[str, Any]
) -> None:
    source = _file(tmp_path / "in.jsonl", [{"occurred_at": "2024-01-01T00:00:00Z"}, entry])
    said = {}
    for backend in ("sqlite", "postgres"):
        said[backend] = _cli(databases[backend], "import", str(source), "-s", scope)
        assert _entries(databases[backend], scope) == {}, backend  # nothing, not the first
    assert said["sqlite"] == said["postgres"]
    code, out, err = said["postgres"]
    assert code != 0 and out == "" and "ISO 8601" in err, err


async def _remember(url: str, scope: str) -> None:
    async with open_runtime(settings(url)) as runtime:
        await runtime.memory.for_scope(scope).remember_many(
            [
                RememberMemoryRequest(
                    text=f"event {i}", occurred_at=when, thread="t", metadata={"i": i}
                )
                for i, when in enumerate(WHEN)
            ]
        )


async def _occurred(url: str, scope: str) -> dict[str, datetime]:
    async with open_runtime(settings(url)) as runtime:
        page = await runtime.memory.for_scope(scope).list(limit=1000)
    return {e.text: e.occurred_at for e in page.entries if e.occurred_at is not None}


def _lines(path: Path) -> list[dict[str, Any]]:
    """An export's entry lines, without what an import does not carry over."""
    _, *entries = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    return [{k: v for k, v in e.items() if k not in {"created_at", "version"}} for e in entries]


def test_sqlite_to_postgres_to_sqlite_keeps_occurred_at_to_the_microsecond(
    databases: dict[str, str], scope: str, tmp_path: Path
) -> None:
    lite, pg, back = databases["sqlite"], databases["postgres"], databases["sqlite-back"]
    asyncio.run(_remember(lite, scope))
    written = asyncio.run(_occurred(lite, scope))
    assert len(written) == len(WHEN)
    for i, when in enumerate(WHEN[:-1]):
        assert when is not None and written[f"event {i}"] == when.astimezone(UTC)
    first, second, third = (tmp_path / f"{n}.jsonl" for n in ("first", "second", "third"))
    _ok(lite, "export", "-s", scope, "-o", str(first))
    _ok(pg, "import", str(first), "-s", scope)
    _ok(pg, "export", "-s", scope, "-o", str(second))
    _ok(back, "import", str(second), "-s", scope)
    _ok(back, "export", "-s", scope, "-o", str(third))
    assert _lines(first) == _lines(second) == _lines(third)
    for url in (pg, back):
        kept = asyncio.run(_occurred(url, scope))
        assert kept == written, url
        assert all(t.utcoffset() == timedelta(0) for t in kept.values())
    # The file's own text: UTC with every microsecond written out.
    shown = {line["text"]: line["occurred_at"] for line in _lines(second)}
    assert shown["event 0"] == "2023-05-08T08:11:07.123456Z"
    assert shown["event 2"] == "2024-03-01T09:00:00.000001Z"
