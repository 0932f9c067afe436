"""How a command runs its async work: Ctrl-C stops it at once, and a store that cannot be
opened names the setting that chose it."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from powercontext.memory.errors import PowerContextError, StorageError

if TYPE_CHECKING:
    from powercontext.runtime import Runtime

T = TypeVar("T")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, but Ctrl-C raises KeyboardInterrupt where the program is.

    asyncio's own SIGINT handler only cancels the main task, which takes effect at its next
    await: a command blocked in a synchronous read inside the loop (`memory import -` waiting
    on stdin) ignored the first Ctrl-C. A handler other than Python's default keeps asyncio
    from installing its own; the runner still cancels and finishes the task on the way out,
    so stores and clients close."""
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        return asyncio.run(main)  # someone chose a handler (SIG_IGN, a host): keep it
    signal.signal(signal.SIGINT, _interrupt)
    try:
        return asyncio.run(main)
    finally:
        signal.signal(signal.SIGINT, previous)


def database_setting() -> str:
    """Which setting chose the database: the URL when it is set, else the home directory."""
    from powercontext.config import HOME_VARIABLE, ServerSettings
    from powercontext.storage import URL_VARIABLE

    try:
        explicit = ServerSettings().database.url
    except (PowerContextError, ValueError):
        explicit = None
    if explicit:
        return f"{URL_VARIABLE} names this database"
    return (
        f"this is the default database under {HOME_VARIABLE}: set {HOME_VARIABLE} or {URL_VARIABLE}"
    )


def _naming_the_setting(exc: StorageError) -> StorageError:
    return StorageError(f"{exc}; {database_setting()}")


@contextmanager
def naming_the_database() -> Iterator[None]:
    """Around work whose storage failures can only be failures to open it (a server's start):
    the message then also says which setting to check."""
    try:
        yield
    except StorageError as exc:
        raise _naming_the_setting(exc) from exc


@asynccontextmanager
async def local_runtime() -> AsyncIterator[Runtime]:
    """The embedded runtime of the POWERCONTEXT_SERVER_* settings (--local, reindex). A store
    that fails to open names the setting that chose it; later failures pass unchanged."""
    from powercontext.runtime import open_runtime

    opened = False
    try:
        async with open_runtime() as runtime:
            opened = True
            yield runtime
    except StorageError as exc:
        if opened:
            raise
        raise _naming_the_setting(exc) from exc
