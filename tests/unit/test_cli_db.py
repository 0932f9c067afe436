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
