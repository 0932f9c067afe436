"""Help output: a boolean flag shows no `<bool>` type.

Typer labels every option with its type, so `--json` and `--local` read `<bool>` as if they
took a value; a flag takes none. Typer has no setting for this, so the one method that renders
the label is wrapped once, at import of the CLI.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption

_original = TyperOption.display_type_rich


def _display_type_rich(self: TyperOption, ctx: Any) -> str | None:
    if self.is_flag:
        return None
    return _original(self, ctx)


def hide_flag_types() -> None:
    TyperOption.display_type_rich = _display_type_rich  # type: ignore[method-assign]
