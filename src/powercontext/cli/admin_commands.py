"""`powercontext reindex` and `powercontext config show`."""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any

import typer

from powercontext.cli import output
from powercontext.cli.errors import fail_on_errors

config_app = typer.Typer(help="Inspect the effective configuration.", no_args_is_help=True)
MASK = "********"
_URL_PASSWORD = re.compile(r"(?P<head>://[^/@:]*:)[^/@]*@")


def reindex(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON counts.")] = False,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="Re-derive the tokens and vectors of every active entry under the current "
            "index settings (after they changed); makes no revision.",
        ),
    ] = False,
) -> None:
    """Embed every active entry that lacks a vector of the current embedding profile.

    Runs on the embedded store (POWERCONTEXT_SERVER_* settings); a server can stay up.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn

    from powercontext.runtime import open_runtime

    async def go(progress: Progress) -> dict[str, int]:
        tasks: dict[str, TaskID] = {}

        def report(scope_id: str, done: int, total: int) -> None:
            if scope_id not in tasks:
                tasks[scope_id] = progress.add_task(scope_id, total=total)
            progress.update(tasks[scope_id], completed=done, total=max(total, done))

        async with open_runtime() as runtime:
            return await runtime.reindex(report, rebuild=rebuild)

    columns = (
        "{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with fail_on_errors(), Progress(*columns, console=output.errors, disable=as_json) as bar:
        counts = asyncio.run(go(bar))
    if as_json:
        output.print_json(counts)
        return
    total = sum(counts.values())
    done = "re-indexed" if rebuild else "embedded"
    output.console.print(f"{done} {total} entries in {len(counts)} scopes")


def _mask_url(url: str) -> str:
    return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}@", url)


def effective_configuration() -> dict[str, Any]:
    """Every setting by its environment variable, with secrets masked."""
    from pydantic import SecretStr

    from powercontext.client.settings import ClientSettings
    from powercontext.config import ServerSettings, env_name

    settings = ServerSettings()
    values: dict[str, Any] = {}
    for group in ("runtime", "inference", "database", "http"):
        model = getattr(settings, group)
        for field in type(model).model_fields:
            value = getattr(model, field)
            if isinstance(value, SecretStr):
                value = MASK
            values[env_name(group, field)] = value
    values[env_name("database", "url")] = _mask_url(settings.database.resolved_url())
    values[env_name("log_format")] = settings.log_format
    client = ClientSettings()
    values["POWERCONTEXT_CLIENT_SERVER_URL"] = _mask_url(client.server_url)
    values["POWERCONTEXT_CLIENT_API_KEY"] = MASK if client.api_key else None
    values["POWERCONTEXT_CLIENT_TIMEOUT"] = client.timeout
    return {
        k: (str(v) if v is not None and not isinstance(v, bool | int | float) else v)
        for k, v in values.items()
    }


@config_app.command("show")
def show(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Print the effective configuration (environment, `.env` and defaults); secrets masked."""
    from rich.table import Table
    from rich.text import Text

    with fail_on_errors():
        values = effective_configuration()
    if as_json:
        output.print_json(values)
        return
    table = Table(title="effective configuration", title_justify="left")
    table.add_column("variable", style="cyan", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in values.items():
        table.add_row(name, Text("(unset)" if value is None else str(value)))
    output.console.print(table)
