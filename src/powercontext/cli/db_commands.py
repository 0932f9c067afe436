"""`powercontext db upgrade`: apply pending schema migrations without starting a server."""

from __future__ import annotations

from pathlib import Path

import typer

from powercontext.cli.errors import fail_on_errors
from powercontext.cli.running import naming_the_database, run_async

app = typer.Typer(help="Database maintenance.", no_args_is_help=True)


async def _upgrade(url: str) -> list[int] | None:
    from powercontext.storage import open_store, postgres_missing

    if url.startswith(("postgresql://", "postgres://")):
        try:
            from powercontext.storage.postgres import upgrade
        except ImportError as exc:
            # What opening the store says (storage.open_store), not a traceback.
            raise postgres_missing(exc) from exc
        return await upgrade(url)

    # The SQLite store migrates when it opens; which versions were pending is not reported.
    store = await open_store(url)
    await store.close()
    return None


def _new_sqlite_file(url: str) -> str | None:
    """The SQLite file `db upgrade` is about to create, if the URL names one that does not
    exist: an operator who mistyped the path should read that a new database was made."""
    from powercontext.storage import sqlite_path

    if not url.startswith("sqlite:///"):
        return None
    path = sqlite_path(url)
    return None if path == ":memory:" or Path(path).exists() else path


@app.command("upgrade")
def upgrade_command() -> None:
    """Apply every pending migration to POWERCONTEXT_SERVER_DATABASE_URL."""
    from powercontext import ServerSettings

    with fail_on_errors():
        url = ServerSettings().database.resolved_url()
        created = _new_sqlite_file(url)
        with naming_the_database():
            applied = run_async(_upgrade(url))
    if applied is None and created is not None:
        typer.echo(f"created a new database at {created}; schema is current")
    elif applied is None:
        typer.echo("schema is current")
    elif applied:
        typer.echo("applied migrations: " + ", ".join(str(v) for v in applied))
    else:
        typer.echo("schema is current; nothing to apply")
