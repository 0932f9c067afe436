"""Help output: a boolean flag shows no `<bool>` type, and no help word is cut short.

Typer labels every option with its type, so `--json` and `--local` read `<bool>` as if they
took a value; a flag takes none. And where an option's help column is narrow at 80 columns,
a word longer than the column (the `[env var: POWERCONTEXT_CLIENT_SERVER_URL]` label) ended
in `…`, so the variable could not be read at all. Typer has no setting for either, so the two
functions that render them are wrapped once, at import of the CLI.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from typer import rich_utils
from typer.core import TyperOption

_original = TyperOption.display_type_rich
_original_parameter_help = rich_utils._get_parameter_help


def _display_type_rich(self: TyperOption, ctx: Any) -> str | None:
    if self.is_flag:
        return None
    return _original(self, ctx)


def _parameter_help(*args: Any, **kwargs: Any) -> Any:
    """The help cell, its texts folded (broken across lines) rather than cut with `…`."""
    cell = _original_parameter_help(*args, **kwargs)
    for item in getattr(cell, "renderables", ()):
        if isinstance(item, Text):
            item.overflow = "fold"
    return cell


def adjust_help() -> None:
    TyperOption.display_type_rich = _display_type_rich  # type: ignore[method-assign]
    rich_utils._get_parameter_help = _parameter_help
