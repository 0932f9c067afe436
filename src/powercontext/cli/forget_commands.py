"""`powercontext memory forget ENTRY_ID...` and `powercontext memory forget-scope`: erasure.

Both ask for confirmation unless `--yes` is given (a script without a terminal must pass it:
the prompt is refused there, so nothing is erased by accident).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Annotated

import typer
from rich.markup import escape

from powercontext.cli import output
from powercontext.cli.backends import CliMemory
from powercontext.cli.errors import EXIT_FAILURE, fail_on_errors
from powercontext.cli.memory_options import (
    REQUEST_OPTIONS,
    Change,
    Connection,
    Scope,
    memory_command,
    option_group,
)
from powercontext.cli.wording import counted
from powercontext.memory.erasure import (
    ForgetMemoryRequest,
    ForgetScopeRequest,
    MemoryForgetResult,
)
from powercontext.memory.scoped import ScopedMemory

LOCAL_ACTOR = "local"
"""The actor an erasure through the embedded store records (a server records the key)."""

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Erase without asking for confirmation.")]
Reason = Annotated[
    str | None, typer.Option(help="An audit note for the change log (never the content).")
]


@dataclass(frozen=True)
class Erasure(Change):
    """The options both erasures share: a write's (`reason` as an audit note), and --yes."""

    reason: Reason = None
    yes: Yes = False

    def confirm(self, question: str) -> None:
        if self.yes:
            return
        if not _ask(question):
            output.print_error("aborted", "nothing was erased (pass --yes to skip this question)")
            raise typer.Exit(EXIT_FAILURE)


def _ask(question: str) -> bool:
    """A y/N question on stderr, the answer read from stdin; only y or yes erases.

    Not `typer.confirm(err=True)`: it writes the prompt's last character, a space, to stdout,
    and stdout is the answer a script parses (`--json`)."""
    sys.stderr.write(f"{question} [y/N]: ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
        echoed = sys.stdin.isatty()
    except KeyboardInterrupt:  # Ctrl-C: no
        answer, echoed = "", False
    if not echoed:  # no line end after the prompt yet: the next message gets its own line
        sys.stderr.write("\n")
    return answer.strip().lower() in ("y", "yes")


erasing = option_group("erasure", Erasure)


def _actor(memory: CliMemory) -> dict[str, str]:
    """The embedded store is told who erases; a server records the caller's key itself."""
    return {"actor": LOCAL_ACTOR} if isinstance(memory, ScopedMemory) else {}


def _print(result: MemoryForgetResult, as_json: bool) -> None:
    if as_json:
        output.print_json(result.model_dump(mode="json"))
        return
    ref = result.memory_ref
    where = f"revision {ref.revision} of {escape(ref.scope_id)}" if ref else "nothing"
    output.console.print(
        f"[green]erased[/] {counted(len(result.entry_ids), 'entry')} "
        f"({counted(result.erased_versions, 'version')}): {where}"
    )


@memory_command
@erasing
def forget(
    entry_ids: Annotated[list[str], typer.Argument(help="The ids of the entries to erase.")],
    scope: Scope,
    *,
    erasure: Erasure,
    connection: Connection,
) -> None:
    """Erase entries for good: every version's text, metadata, tokens and vectors."""
    with fail_on_errors(REQUEST_OPTIONS):
        request = ForgetMemoryRequest(entry_ids=tuple(entry_ids), **erasure.recorded())
    erasure.confirm(f"Erase {counted(len(entry_ids), 'entry')} of {scope!r} for good?")

    result = connection.run(scope, lambda m: m.forget(request, **_actor(m)))
    _print(result, connection.as_json)


@memory_command
@erasing
def forget_scope(scope: Scope, *, erasure: Erasure, connection: Connection) -> None:
    """Erase every entry of a scope for good; its revisions and tombstones remain."""
    with fail_on_errors(REQUEST_OPTIONS):  # a bad --reason or --idempotency-key: one line
        request = ForgetScopeRequest(**erasure.recorded())
    erasure.confirm(f"Erase EVERY entry of scope {scope!r} for good?")

    result = connection.run(scope, lambda m: m.forget_scope(request, **_actor(m)))
    _print(result, connection.as_json)
