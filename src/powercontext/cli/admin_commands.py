"""`powercontext reindex` and `powercontext config show`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from powercontext.cli import output
from powercontext.cli.errors import EXIT_CONFIGURATION, fail_on_errors
from powercontext.cli.running import local_runtime, run_async
from powercontext.cli.wording import counted
from powercontext.config.secrets import MASK, mask_url

config_app = typer.Typer(help="Inspect the effective configuration.", no_args_is_help=True)


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
    scopes: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            metavar="SCOPE",
            help="Only this scope (repeat for several); other scopes are left as they are. "
            "A scope the store does not hold is an error (exit 2).",
        ),
    ] = None,
) -> None:
    """Embed every active entry that lacks a vector of the current embedding profile.

    Runs on the embedded store (POWERCONTEXT_SERVER_* settings); a server can stay up.
    """
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn
    from rich.text import Text

    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    # Started at the first scope's first report: started at once, the bar wrote an empty line
    # to stderr when there was nothing to do, or before the error when the store failed.
    bar = Progress(*columns, console=output.errors, disable=as_json)
    tasks: dict[str, TaskID] = {}

    def report(scope_id: str, done: int, total: int) -> None:
        if not tasks:
            bar.start()
        if scope_id not in tasks:
            # A label is markup; a scope id is not (`team[/]a` ended the command).
            tasks[scope_id] = bar.add_task(escape(scope_id), total=total)
        bar.update(tasks[scope_id], completed=done, total=max(total, done))

    async def go() -> dict[str, int]:
        from powercontext.runtime import unknown_scopes

        async with local_runtime() as runtime:
            unknown = unknown_scopes(scopes, await runtime.store.scope_ids()) if scopes else []
            if unknown:  # a mistyped name is a usage error, found before any work
                names = ", ".join(repr(scope) for scope in unknown)
                output.print_error("not_found", f"--scope {names}: no such scope in this store")
                raise typer.Exit(EXIT_CONFIGURATION)
            return await runtime.reindex(report, rebuild=rebuild, scopes=scopes or None)

    with fail_on_errors():
        try:
            counts = run_async(go())
        finally:
            if tasks:
                bar.stop()
    if as_json:
        output.print_json(counts)
        return
    total = sum(counts.values())
    done = "re-indexed" if rebuild else "embedded"
    where = counted(len(counts), "scope")
    if scopes:  # say which, so a log shows that the others were not touched
        where = f"{'scope' if len(counts) == 1 else 'scopes'} {', '.join(counts)}"
    output.console.print(Text(f"{done} {counted(total, 'entry')} in {where}"), soft_wrap=True)


def effective_configuration() -> dict[str, Any]:
    """Every setting by its environment variable, with secrets masked.

    The groups and fields are read from the settings models, so a new setting is listed
    without touching this command."""
    from pydantic import BaseModel, SecretStr

    from powercontext.client.settings import ClientSettings
    from powercontext.config import HOME_VARIABLE, ServerSettings, data_home, env_name

    settings = ServerSettings()
    values: dict[str, Any] = {HOME_VARIABLE: str(data_home())}
    for name in type(settings).model_fields:
        group = getattr(settings, name)
        if not isinstance(group, BaseModel):
            values[env_name(name)] = group
            continue
        for field in type(group).model_fields:
            value = getattr(group, field)
            values[env_name(name, field)] = MASK if isinstance(value, SecretStr) else value
    values[env_name("database", "url")] = settings.database.resolved_url()
    client = ClientSettings()
    for field in type(client).model_fields:
        value = getattr(client, field)
        if isinstance(value, SecretStr):
            value = MASK
        values[f"{CLIENT_PREFIX}{field.upper()}"] = value
    # Every URL-valued setting, not only the database's: a rerank endpoint or a generation
    # base URL can carry credentials too.
    return {k: _shown(v) for k, v in values.items()}


def _shown(value: Any) -> Any:
    """A setting as it is written back: a mapping or list as JSON (what the variable takes, not
    Python's repr), any text with the credentials of a URL masked."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict | list | tuple):
        return mask_url(json.dumps(value, separators=(",", ":")))
    return mask_url(str(value))


CLIENT_PREFIX = "POWERCONTEXT_CLIENT_"
_SECTIONS = (
    "POWERCONTEXT_SERVER_RUNTIME_",
    "POWERCONTEXT_SERVER_INFERENCE_",
    "POWERCONTEXT_SERVER_DATABASE_",
    "POWERCONTEXT_SERVER_HTTP_",
    "POWERCONTEXT_SERVER_UI_",
    "POWERCONTEXT_SERVER_",
    CLIENT_PREFIX,
    "POWERCONTEXT_",
)


def _sections(values: dict[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    """Variables grouped by their longest known prefix, the prefix cut off the name, so the
    names fit in 80 columns (the longest is 38 characters) and values keep room."""
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for name, value in values.items():
        prefix = next(p for p in _SECTIONS if name.startswith(p))
        grouped.setdefault(prefix, []).append((name.removeprefix(prefix), value))
    return grouped


def _display(value: Any) -> str:
    if value is None:
        return "(unset)"
    return str(value).lower() if isinstance(value, bool) else str(value)


@config_app.command("show")
def show(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Print every setting's effective value, grouped by variable prefix; secrets masked.

    Values come from the environment, `.env` and the defaults. --json prints
    the full variable names."""
    from rich.table import Table
    from rich.text import Text

    with fail_on_errors():
        values = effective_configuration()
    if as_json:
        output.print_json(values)
        return
    for prefix, rows in _sections(values).items():
        output.console.print(Text(f"{prefix}*", style="bold"), soft_wrap=True)
        table = Table(show_header=False, box=None, padding=(0, 1, 0, 2))
        table.add_column("variable", style="cyan", no_wrap=True)
        table.add_column("value", overflow="fold")
        for name, value in rows:
            table.add_row(name, Text(_display(value)))
        output.console.print(table)
