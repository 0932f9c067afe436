"""`powercontext bench ...`: mounts the LoCoMo harness only when it is installed and invoked.

The harness imports a lot; importing it lazily keeps every other command fast, and a build
without it still has a working CLI.
"""

from __future__ import annotations

import importlib

import click
import typer

from powercontext.cli.output import print_error

app = typer.Typer(help="Benchmarks (LoCoMo).", no_args_is_help=True)
LOCOMO_MODULE = "powercontext.bench.locomo.cli"


@app.command(
    "locomo",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def locomo(ctx: typer.Context) -> None:
    """Run the LoCoMo benchmark (`powercontext bench locomo --help` for its options)."""
    try:
        module = importlib.import_module(LOCOMO_MODULE)
    except ImportError as exc:
        print_error("not_installed", f"the LoCoMo harness is not available ({exc.name})")
        raise typer.Exit(1) from exc
    command = typer.main.get_command(module.app)
    args = list(ctx.args)
    if isinstance(command, click.Group):
        args = ["locomo", *args]
    command.main(args=args, prog_name="powercontext bench locomo", standalone_mode=True)
