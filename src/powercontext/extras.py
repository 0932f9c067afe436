"""How to install an optional extra, said the same way wherever a missing one is reported."""

from __future__ import annotations

DISTRIBUTION = "powercontext-memory"
"""The distribution's name on the package index (the import name is `powercontext`)."""


def install_hint(extra: str, *, reinstall: bool = False) -> str:
    """The pip command for `extra`, from the package index and from a clone of the repository
    (an install from a clone is what the README's first command makes)."""
    force = "--force-reinstall " if reinstall else ""
    return (
        f"pip install {force}'{DISTRIBUTION}[{extra}]', "
        f"or in a clone pip install {force}-e '.[{extra}]'"
    )
