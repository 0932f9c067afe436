from pathlib import Path

import pytest
from typer.testing import CliRunner

from powercontext.cli.app import app


def test_db_upgrade_creates_a_current_sqlite_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "fresh.db"
    monkeypatch.setenv("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{db}")
    result = CliRunner().invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert "schema is current" in result.output
    assert db.exists()


@pytest.mark.postgres
async def test_db_upgrade_on_postgres_reports_applied_versions(tmp_path: Path) -> None:
    from powercontext.cli.db_commands import _upgrade
    from powercontext.storage.postgres import SCHEMA_VERSION
    from tests import pg_server

    url = await pg_server.database_url(tmp_path, unmigrated=True)
    assert await _upgrade(url) == list(range(1, SCHEMA_VERSION + 1))
    assert await _upgrade(url) == []


def test_db_upgrade_says_when_it_created_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mistyped path must not read as an upgrade of an existing database.
    db = tmp_path / "typo" / "memory.db"
    monkeypatch.setenv("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{db}")
    first = CliRunner().invoke(app, ["db", "upgrade"])
    assert first.exit_code == 0, first.output
    assert f"created a new database at {db}" in first.output
    again = CliRunner().invoke(app, ["db", "upgrade"])
    assert again.exit_code == 0, again.output
    assert again.output.strip() == "schema is current"
