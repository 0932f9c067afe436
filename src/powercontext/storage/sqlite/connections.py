"""Connections of one store: a single writer behind a lock and a small pool of readers.

Every method here but `read_now` blocks; the store calls them from worker threads so the
event loop never waits on SQLite. `read_now` never waits: it runs a short read on the
caller's thread on a connection of its own, or says it would wait. In WAL mode readers see
committed snapshots while the writer works. An
in-memory database exists only inside its one connection, so `:memory:` serves reads and
writes from that connection, serialized by the writer lock.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from powercontext.memory.errors import MemoryValidationError, StorageError
from powercontext.storage.sqlite.errors import storage_error
from powercontext.storage.sqlite.schema import foreign_tables, migrate

T = TypeVar("T")
MEMORY = ":memory:"
_PRAGMA_NAME = re.compile(r"^[a-z_]+$")
_PRAGMA_VALUE = re.compile(r"^-?[A-Za-z0-9_]+$")


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    busy_timeout_seconds: float = 10.0
    """How long a writer waits for another process's write lock before a StorageError."""
    readers: int = 3
    synchronous: str = "FULL"
    """FULL: a commit that returned survives power loss; NORMAL trades that for speed."""
    pragmas: Mapping[str, int | str] = field(default_factory=dict)
    """Extra PRAGMAs for every connection, applied after the defaults (e.g. cache_size)."""


def _use_wal(conn: sqlite3.Connection, patience_seconds: float) -> object:
    """The journal mode after asking for WAL. The switch needs the file to itself, and SQLite
    answers SQLITE_BUSY at once instead of calling the busy handler, so a process opening a
    file another is creating or migrating at the same moment is refused: it retries for as
    long as a busy lock would be waited for."""
    deadline = time.monotonic() + patience_seconds
    while True:
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            busy = (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _pragma_statements(options: ConnectionOptions) -> list[str]:
    statements = [
        f"PRAGMA busy_timeout = {int(options.busy_timeout_seconds * 1000)}",
        "PRAGMA foreign_keys = ON",
        # Freed pages and cells are zeroed: an erased entry's bytes do not linger in free
        # space of the file (see storage.sqlite.erasure).
        "PRAGMA secure_delete = ON",
        f"PRAGMA synchronous = {options.synchronous}",
    ]
    for name, value in {"synchronous": options.synchronous, **options.pragmas}.items():
        if not _PRAGMA_NAME.match(name) or not _PRAGMA_VALUE.match(str(value)):
            raise StorageError(f"invalid SQLite pragma {name!r} = {value!r}")
    statements.extend(f"PRAGMA {name} = {value}" for name, value in options.pragmas.items())
    return statements


def _connect(target: str, options: ConnectionOptions) -> sqlite3.Connection:
    conn = sqlite3.connect(
        target,
        timeout=options.busy_timeout_seconds,
        isolation_level=None,  # we issue BEGIN/COMMIT ourselves
        check_same_thread=False,  # used by one worker thread at a time, under a lock
    )
    try:
        for statement in _pragma_statements(options):
            conn.execute(statement)
    except BaseException:
        conn.close()
        raise
    return conn


def _refuse_foreign(conn: sqlite3.Connection, target: str) -> None:
    tables = foreign_tables(conn)
    if tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise StorageError(
            f"{target} is a SQLite database of another application (tables: {shown}); "
            "PowerContext leaves it untouched: point the database URL at a new file or a "
            "PowerContext database"
        )


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite rolls some failures (SQLITE_FULL, I/O errors) back by itself.
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _out_of_range(exc: OverflowError) -> MemoryValidationError:
    return MemoryValidationError(f"an integer is outside SQLite's 64-bit range ({exc})")


class WouldWait(Exception):
    """`read_now` would have to wait: its connection is in use, or the database is locked."""


_WAITS = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}


class ConnectionPool:
    def __init__(
        self,
        target: str,
        writer: sqlite3.Connection,
        readers: list[sqlite3.Connection],
        now: sqlite3.Connection | None = None,
    ) -> None:
        self.target = target
        self._where = None if target == MEMORY else target
        """The file named in error messages."""
        self._writer = writer
        self._write_lock = threading.Lock()
        self._now = now
        self._now_lock = threading.Lock()
        self._readers = readers
        self._idle = list(readers)
        self._cond = threading.Condition()
        self._closed = False

    @classmethod
    def open(cls, path: str | Path, options: ConnectionOptions) -> ConnectionPool:
        """Open, configure and migrate. Blocking; raises StorageError on any SQLite failure."""
        target = MEMORY if str(path) == MEMORY else str(Path(path).expanduser())
        conns: list[sqlite3.Connection] = []
        try:
            if target != MEMORY:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
            writer = _connect(target, options)
            conns.append(writer)
            if target != MEMORY:
                _refuse_foreign(writer, target)
                mode = _use_wal(writer, options.busy_timeout_seconds)
                if str(mode).lower() != "wal":
                    raise StorageError(f"could not switch {target} to WAL mode (got {mode})")
            try:
                migrate(writer)
            except StorageError as exc:  # a newer schema: say which file
                raise StorageError(f"cannot open {target}: {exc}") from exc
            if target == MEMORY:
                return cls(target, writer, [])
            for _ in range(max(1, options.readers) + 1):
                reader = _connect(target, options)
                conns.append(reader)
                reader.execute("PRAGMA query_only = ON")
            now = conns.pop()
            # never waits for a lock: read_now falls back to a pooled reader instead
            now.execute("PRAGMA busy_timeout = 0")
            return cls(target, writer, conns[1:], now)
        except sqlite3.Error as exc:
            for conn in conns:
                conn.close()
            raise storage_error(exc, f"opening {target}") from exc
        except OSError as exc:
            raise StorageError(
                f"cannot create the directory of {target}: {exc}; create it, or let this "
                "user write its parent"
            ) from exc
        except BaseException:
            for conn in conns:
                conn.close()
            raise

    def write(self, work: Callable[[sqlite3.Connection], T], doing: str) -> T:
        """Run `work` in one BEGIN IMMEDIATE transaction: all of it commits, or none."""
        with self._write_lock:
            self._check_open()
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
                result = work(conn)
                conn.execute("COMMIT")
                return result
            except sqlite3.Error as exc:
                _rollback(conn)
                raise storage_error(exc, doing, self._where) from exc
            except OverflowError as exc:
                _rollback(conn)
                raise _out_of_range(exc) from exc
            except BaseException:
                _rollback(conn)
                raise

    def outside_transaction(self, work: Callable[[sqlite3.Connection], T], doing: str) -> T:
        """Run `work` on the writer with no transaction open (a WAL checkpoint needs that)."""
        with self._write_lock:
            self._check_open()
            try:
                return work(self._writer)
            except sqlite3.Error as exc:
                raise storage_error(exc, doing, self._where) from exc

    def read(self, work: Callable[[sqlite3.Connection], T], doing: str) -> T:
        """Run `work` in one read transaction, so all its statements see one snapshot."""
        if not self._readers:
            with self._write_lock:
                self._check_open()
                return self._read_on(self._writer, work, doing)
        conn = self._acquire_reader()
        try:
            return self._read_on(conn, work, doing)
        finally:
            self._release_reader(conn)

    def read_now(self, work: Callable[[sqlite3.Connection], T], doing: str) -> T:
        """`read` on the caller's thread, for a short read (a few rows by key, a small
        scope's cached search): on the event loop it costs less than handing the read to a
        worker thread and back. Raises WouldWait instead of waiting (its connection busy, a
        lock held, an in-memory database), and passes on a WouldWait that `work` raises."""
        conn = self._now
        if conn is None or not self._now_lock.acquire(blocking=False):
            raise WouldWait
        try:
            self._check_open()
            return self._read_on(conn, work, doing)
        except StorageError as exc:
            cause = exc.__cause__
            if isinstance(cause, sqlite3.OperationalError) and _waits(cause):
                raise WouldWait from cause
            raise
        finally:
            self._now_lock.release()

    def _read_on(
        self, conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], doing: str
    ) -> T:
        try:
            conn.execute("BEGIN")
            try:
                return work(conn)
            finally:
                _rollback(conn)
        except sqlite3.Error as exc:
            raise storage_error(exc, doing, self._where) from exc
        except OverflowError as exc:
            raise _out_of_range(exc) from exc

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("the SQLite store is closed")

    def _acquire_reader(self) -> sqlite3.Connection:
        with self._cond:
            while True:
                self._check_open()
                if self._idle:
                    return self._idle.pop()
                self._cond.wait()

    def _release_reader(self, conn: sqlite3.Connection) -> None:
        with self._cond:
            self._idle.append(conn)
            self._cond.notify_all()

    def close(self) -> None:
        """Wait for running work to finish, then close every connection."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            while len(self._idle) < len(self._readers):
                self._cond.wait()
            for conn in self._readers:
                conn.close()
        with self._now_lock:
            if self._now is not None:
                self._now.close()
        with self._write_lock:
            self._writer.close()


def _waits(exc: sqlite3.OperationalError) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _WAITS
