"""`powercontext db upgrade`: apply pending schema migrations without starting a server."""

from __future__ import annotations

import asyncio

import typer

from powercontext.cli.errors import fail_on_errors

app = typer.Typer(help="Database maintenance.", no_args_is_help=True)


async def _upgrade(url: str) -> list[int] | None:
    if url.startswith(("postgresql://", "postgres://")):
        from powercontext.storage.postgres import upgrade

        return await upgrade(url)
    from powercontext.storage import open_store

    # The SQLite store migrates when it opens; which versions were pending is not reported.
    store = await open_store(url)
    await store.close()
    return None


@app.command("upgrade")
def upgrade_command() -> None:
    """Apply every pending migration to POWERCONTEXT_SERVER_DATABASE_URL."""
    from powercontext import ServerSettings

    with fail_on_errors():
        url = ServerSettings().database.resolved_url()
        applied = asyncio.run(_upgrade(url))
    if applied is None:
        typer.echo("schema is current")
    elif applied:
        typer.echo("applied migrations: " + ", ".join(str(v) for v in applied))
    else:
        typer.echo("schema is current; nothing to apply")
