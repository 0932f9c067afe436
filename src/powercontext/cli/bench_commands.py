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
_COMPLETION = {"install_completion", "show_completion"}


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
    # The harness's own app offers shell completion; under `powercontext` the root does.
    command.params = [p for p in command.params if p.name not in _COMPLETION]
    args = list(ctx.args)
    if isinstance(command, click.Group):
        args = ["locomo", *args]
    try:
        # A fresh root context: it takes `-h` from ours, as every other command does.
        command.main(
            args=args,
            prog_name="powercontext bench locomo",
            standalone_mode=True,
            help_option_names=ctx.help_option_names,
        )
    except OSError as exc:
        # An --out or --data path the harness cannot create or write (a traceback before).
        where = f"{exc.filename}: " if exc.filename else ""
        print_error("file_error", f"{where}{exc.strerror or exc}")
        raise typer.Exit(1) from exc
