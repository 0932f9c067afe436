"""The `powercontext` command line (Typer). Heavy modules are imported by the commands that
need them, so `powercontext --help` stays fast."""

from powercontext.cli.app import app, main

__all__ = ["app", "main"]
