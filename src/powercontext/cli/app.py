"""The root `powercontext` command."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from powercontext.cli import (
    admin_commands,
    bench_commands,
    db_commands,
    mcp_commands,
    memory_commands,
    server_commands,
)
from powercontext.cli.help_format import adjust_help

adjust_help()

# Click passes the help option names down to every sub-command's context, so `-h` set on the
# root answers everywhere (`powercontext db -h`), as in `llm` and `sqlite-utils`.
HELP_OPTION_NAMES = ["-h", "--help"]

app = typer.Typer(
    name="powercontext",
    help="PowerContext: durable, revisioned Memory for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": HELP_OPTION_NAMES},
)
app.add_typer(server_commands.app, name="server")
app.add_typer(memory_commands.app, name="memory")
app.add_typer(admin_commands.config_app, name="config")
app.add_typer(bench_commands.app, name="bench")
app.add_typer(db_commands.app, name="db")
app.command("reindex")(admin_commands.reindex)
app.command("mcp")(mcp_commands.mcp)


def _version(value: bool) -> None:
    if value:
        from powercontext import __version__

        typer.echo(f"powercontext {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """PowerContext: durable, revisioned Memory for AI agents."""


def main() -> None:
    _utf8_streams()
    app()


def _utf8_streams() -> None:
    """Write UTF-8 whatever the locale: memory text is any Unicode, and JSON (the --json
    output, exports) is UTF-8 by definition. Under a latin-1 or C locale an emoji in a hit
    would otherwise end the command with a UnicodeEncodeError after its work was done."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        encoding = str(getattr(stream, "encoding", "") or "").lower().replace("-", "")
        if reconfigure is not None and encoding != "utf8":
            reconfigure(encoding="utf-8")
