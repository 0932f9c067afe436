"""`powercontext memory export|import`: a scope to JSON lines and back, with a progress bar.

The bar is drawn on stderr, so `export` can write the lines to stdout for a pipe; `--json`
turns it off. Both run against a server (the SDK streams) or the embedded store (--local).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn
from rich.text import Text

from powercontext.cli import output
from powercontext.cli.errors import fail_on_errors
from powercontext.cli.memory_options import Connection, Scope, memory_command
from powercontext.cli.wording import counted
from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.transfer import OnExisting
from powercontext.memory.transfer_lines import text_lines

Revision = Annotated[
    int | None, typer.Option(min=1, help="The revision to export (default the head).")
]
OutputFile = Annotated[
    str, typer.Option("--output", "-o", help="Where to write the lines; `-` (default): stdout.")
]
InputFile = Annotated[str, typer.Argument(help="An export file; `-`: stdin.")]
OnExistingOption = Annotated[
    OnExisting,
    typer.Option(
        help="An entry id the scope holds already: fail (default; nothing more is written), "
        "skip it, or replace it with the imported version. An erased id is never written "
        "again: skip leaves it out, fail and replace stop."
    ),
]


Update = Callable[..., None]
"""`update(completed=..., total=...)`: the fields of the bar's one task."""


@contextmanager
def _bar(description: str, *, disable: bool) -> Iterator[Update]:
    """A bar drawn from its first update on: a transfer that fails before any line (a missing
    header, bytes that are not UTF-8) leaves its one error line alone on stderr."""
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    progress = Progress(*columns, console=output.errors, disable=disable)
    tasks: list[TaskID] = []

    def update(**fields: Any) -> None:
        if not tasks:
            progress.start()
            # The label is markup: a scope id such as `team[/]a` ended the command.
            tasks.append(progress.add_task(escape(description), total=None))
        progress.update(tasks[0], **fields)

    try:
        yield update
    finally:
        if tasks:
            progress.stop()


@contextmanager
def _opened(path: str, mode: Literal["r", "w"]) -> Iterator[TextIO]:
    if path == "-":
        stream = sys.stdout if mode == "w" else sys.stdin
        # An export is UTF-8 whatever the locale says: a cp1252 or latin-1 stdout could not
        # write an emoji, and such a stdin would read every non-ASCII character wrong.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding="utf-8", errors="strict", newline="\n" if mode == "w" else None)
        yield stream
        return
    try:
        if mode == "w":
            with _replacing(path) as handle:
                yield handle
            return
        with open(path, mode, encoding="utf-8", newline="\n") as handle:
            yield handle
    except OSError as exc:
        raise MemoryValidationError(f"cannot open {path}: {exc.strerror}") from exc


@contextmanager
def _replacing(path: str) -> Iterator[TextIO]:
    """The file at `path`, written whole or not at all: the lines go to a new file beside it,
    which replaces it (keeping its mode) once the export is complete. Opened in place, an
    export that failed (a mistyped scope, a server down) emptied the last good export there.
    A path that is no regular file (/dev/stdout, a FIFO) is written in place."""
    target = Path(os.path.realpath(path))  # through a symlink: the link stays
    existing = target.stat() if target.exists() else None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
        return
    if existing is not None and not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            if existing is not None:
                os.chmod(temp, stat.S_IMODE(existing.st_mode))
            yield handle
        os.replace(temp, target)
    except BaseException:  # typer.Exit too: the failure was reported already
        temp.unlink(missing_ok=True)
        raise


async def _close(lines: AsyncIterator[str]) -> None:
    """Close the export's stream in the loop when the sink failed (`| head`): left to the
    loop's shutdown, its close raised a second error, printed with a traceback."""
    close = getattr(lines, "aclose", None)
    if close is not None:
        await close()


@memory_command
def export(
    scope: Scope,
    output_file: OutputFile = "-",
    revision: Revision = None,
    *,
    connection: Connection,
) -> None:
    """Export the entries of a scope as JSON lines (a header line, then one entry per line)."""
    with fail_on_errors(), _opened(output_file, "w") as sink:
        with _bar(f"export {scope}", disable=connection.as_json) as update:

            async def copy(lines: AsyncIterator[str]) -> int:
                written = -1  # the header is not an entry
                try:
                    async for line in lines:
                        if written < 0:
                            update(total=json.loads(line).get("entry_count"))
                        sink.write(line)
                        written += 1
                        update(completed=max(written, 0))
                finally:
                    await _close(lines)
                return max(written, 0)

            count = connection.run(scope, lambda m: copy(m.export_lines(revision=revision)))
        sink.flush()
    if connection.as_json:
        if output_file != "-":
            output.print_json({"scope_id": scope, "entries": count, "output": output_file})
        return
    where = "stdout" if output_file == "-" else output_file
    done = f"exported {counted(count, 'entry')} of {scope} to {where}"
    output.errors.print(Text(done), soft_wrap=True)


@memory_command
def import_(
    source: InputFile,
    scope: Scope,
    on_existing: OnExistingOption = "fail",
    *,
    connection: Connection,
) -> None:
    """Import an export into a scope, keeping entry ids (one revision per batch of lines)."""
    with fail_on_errors():
        source_path = source if source == "-" else str(Path(source))
        with (
            _opened(source_path, "r") as lines,
            _bar(f"import {scope}", disable=connection.as_json) as update,
        ):

            def report(done: int, total: int | None) -> None:
                update(completed=done, total=total)

            result = connection.run(
                scope,
                lambda m: m.import_lines(
                    text_lines(lines), on_existing=on_existing, progress=report
                ),
            )
    if connection.as_json:
        output.print_json(result.model_dump(mode="json"))
        return
    head = result.memory_ref.revision if result.memory_ref else 0
    output.print_phrases(
        (
            f"imported into {scope}:",
            f"{result.added} added,",
            f"{result.replaced} replaced,",
            f"{result.skipped} skipped,",
            f"in {counted(result.revisions, 'revision')}",
            f"(head {head})",
        )
    )
