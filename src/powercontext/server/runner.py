"""`serve`: run the app with uvicorn, refusing an unsafe public bind.

The runtime (configuration, models, database) is opened before uvicorn starts, in the same
event loop, so a startup error (a missing extra, a missing provider key, an unreachable
database) reaches the command line as the exception itself: one line, not the traceback
uvicorn prints for a failed lifespan.

With `workers` > 1, uvicorn's supervisor binds the socket and starts that many processes, each
with its own app and runtime on the same database (a file or PostgreSQL: writes from several
processes are serialized by the store and retried on a lost race). The parent opens the
runtime once first, so configuration errors still come out as one line and schema
migrations run once before the workers start. A worker that still fails to start (the database
went away in between) stops the others and fails the command: never exit 0 for a server that
did not serve. The workers write their metrics to a shared directory, so a scrape reaching any
of them reports all (`server/metrics.py`).

The address is tried before anything opens: a port in use, a host that is no address or host
name, or a name that does not resolve is one line, not uvicorn's log of a started app that then
failed to bind. A worker that fails to start logs its cause as one line too (the traceback at
debug level), so the operator reads the reason, not a stack.

uvicorn parses HTTP with httptools and runs on uvloop when they are importable (core
dependencies, prebuilt wheels; both are C): about a tenth of the server's CPU per search
request against h11 and asyncio's pure-Python loop. Without them it falls back to h11 and
asyncio, with the same behaviour.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import re
import shutil
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from powercontext.config import ServerSettings
from powercontext.config.secrets import mask_url
from powercontext.memory.errors import ConfigurationError, PowerContextError
from powercontext.memory.service import SearchObserver
from powercontext.runtime import Runtime, open_runtime
from powercontext.server.app import create_app
from powercontext.server.auth import ApiKeyAuthority, check_bind_safety
from powercontext.server.logs import configure_logging
from powercontext.server.metrics import MULTIPROCESS_DIRECTORY
from powercontext.storage import sqlite_path

GRACEFUL_SHUTDOWN_SECONDS = 10
_HOST_VARIABLE = "POWERCONTEXT_SERVER_HTTP_HOST"
# One label of a DNS name; `_` too, which resolvers and container names use.
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")
_log = logging.getLogger(__name__)


def serve(settings: ServerSettings | None = None, *, workers: int = 1) -> None:
    """Serve until SIGINT/SIGTERM; in-flight requests get GRACEFUL_SHUTDOWN_SECONDS to finish,
    then the runtime (and the database) is closed."""
    settings = settings if settings is not None else ServerSettings()
    _check_host(settings.http.host)
    check_bind_safety(settings.http, ApiKeyAuthority.from_config(settings.http))
    configure_logging(settings.log_format)
    if workers > 1:
        _serve_workers(settings, workers)
    else:
        _check_address(settings.http.host, settings.http.port)
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(_serve(settings))


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed, else None (asyncio's own)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _http_implementation() -> str:
    """httptools (C) when it is installed, else h11 (pure Python)."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


def worker_app() -> ASGIApp:
    """The app of one worker process (uvicorn's factory): settings from the environment."""
    settings = ServerSettings()
    configure_logging(settings.log_format)
    return _StartupFailureInOneLine(create_app(settings))


class _StartupFailureInOneLine:
    """A worker's app whose failure to start is logged as one line, not a traceback.

    Starlette reports a lifespan that raised with the formatted traceback, which uvicorn logs at
    ERROR; the parent then ends the command with the cause in one line of its own, below a
    stack per worker. The cause stays in the log (the parent cannot always reproduce it: the
    database may be back), the stack goes to debug level."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def send_one_line(message: Message) -> None:
            if message["type"] == "lifespan.startup.failed":
                # Starlette sends this while it handles the exception, before re-raising it.
                failure = sys.exc_info()[1]
                _log.debug("the server process could not start", exc_info=failure)
                message = {**message, "message": _startup_failure(failure, message)}
            await send(message)

        await self.app(scope, receive, send_one_line)


def _startup_failure(failure: BaseException | None, message: Message) -> str:
    if isinstance(failure, PowerContextError):
        cause = f"{failure.code}: {failure}"
    elif failure is not None:
        cause = f"{type(failure).__name__}: {failure}"
    else:  # not sent from an except block: the traceback's last line names the exception
        lines = str(message.get("message") or "").strip().splitlines()
        cause = lines[-1] if lines else "unknown error"
    return f"the server process could not start: {cause}"


def _serve_workers(settings: ServerSettings, workers: int) -> None:
    if (settings.database.url or "").endswith(":memory:"):
        raise ConfigurationError(
            "--workers needs a database the processes can share: an in-memory SQLite database "
            "belongs to one process (set POWERCONTEXT_SERVER_DATABASE_URL to a file or "
            "postgresql://...)"
        )
    sock = _listen(settings.http.host, settings.http.port)
    with sock:
        _run_workers(settings, workers, sock)


def _run_workers(settings: ServerSettings, workers: int, sock: socket.socket) -> None:
    asyncio.run(_check_opens(settings))
    _log.info(database_line(settings.database.resolved_url()))  # once, not once per worker
    # Workers read their settings from the environment: carry the command line's bind there
    # (the port bound, which --port 0 left to the kernel).
    os.environ["POWERCONTEXT_SERVER_HTTP_HOST"] = settings.http.host
    os.environ["POWERCONTEXT_SERVER_HTTP_PORT"] = str(sock.getsockname()[1])
    config = uvicorn.Config(
        "powercontext.server.runner:worker_app",
        factory=True,
        workers=workers,
        **_uvicorn_options(settings),
    )
    # A fresh directory: files left by an earlier run would be counted again.
    metrics = tempfile.mkdtemp(prefix="powercontext-metrics-")
    os.environ[MULTIPROCESS_DIRECTORY] = metrics
    try:
        supervisor = Multiprocess(config, sockets=[sock])
        supervisor.run()
    finally:
        shutil.rmtree(metrics, ignore_errors=True)
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        # The cause, as one line, when the database still cannot be opened.
        asyncio.run(_check_opens(settings))
        raise PowerContextError("a server process failed to start (its log above says why)")


def _check_host(host: str) -> None:
    """An IP address or a host name by its syntax, before the public-bind check judges it: a
    typo is named as such, not refused as a public bind. An empty host is no default (the
    supervisor's bind takes it as every interface, asyncio's as none). Whether a name resolves
    is the bind's to find out."""
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    labels = (host[:-1] if host.endswith(".") else host).split(".")
    # An all-digit last label is a mistyped IPv4 address (999.1.1.1), never a top-level domain.
    if len(host) <= 253 and all(map(_HOST_LABEL.fullmatch, labels)) and not labels[-1].isdigit():
        return
    if not host.strip():
        problem = "the host is empty"
    elif host.startswith("[") and host.endswith("]"):
        problem = "an IPv6 address goes without brackets (::1)"
    else:
        problem = "not an IP address or a host name"
    raise ConfigurationError(
        f"cannot listen on {host!r}: {problem}; give --host ({_HOST_VARIABLE}) as an address "
        "(127.0.0.1, ::1, or 0.0.0.0 for every interface) or a host name such as localhost"
    )


def _check_address(host: str, port: int) -> None:
    """Bind and release every address `host` names, as asyncio's server will."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise ConfigurationError(
            f"cannot listen on {_where(host, port)}: {reason}; check --host ({_HOST_VARIABLE})"
        ) from exc
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            _bind(probe, address, host, port)


def _listen(host: str, port: int) -> socket.socket:
    """The socket every worker accepts on, bound as uvicorn's supervisor binds it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        _bind(sock, (host, port), host, port)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    logging.getLogger("uvicorn.error").info(
        "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", shown, sock.getsockname()[1]
    )
    return sock


def _bind(sock: socket.socket, address: Any, host: str, port: int) -> None:
    # As uvicorn and asyncio bind: a port in TIME_WAIT is free, one with a listener is not.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if sock.family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        hint = (
            "another process holds it: stop it, or choose another --port "
            "(POWERCONTEXT_SERVER_HTTP_PORT)"
            if exc.errno == errno.EADDRINUSE
            else "check --host and --port"
        )
        reason = (exc.strerror or str(exc)).lower()
        where = _where(host, port)
        raise ConfigurationError(f"cannot listen on {where}: {reason}; {hint}") from exc


def _where(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """What every way of serving passes uvicorn: our own logging, no server header, the
    fastest HTTP parser and event loop installed."""
    return {
        "http": _http_implementation(),
        "loop": "asyncio" if _loop_factory() is None else "uvloop",
        "host": settings.http.host,
        "port": settings.http.port,
        "log_config": None,
        "access_log": False,
        "lifespan": "on",
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
        "server_header": False,
    }


class _Server(uvicorn.Server):
    """uvicorn's server, minus re-raising the stop signal once it shut down cleanly.

    uvicorn kills its own process with the captured SIGTERM/SIGINT after a graceful shutdown,
    so `server run` would end by signal (143 in a shell, a failure to a supervisor that checks
    the code) before the runtime is closed. A clean stop exits 0 once the database is closed;
    a shutdown that raises still re-raises the signal."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            # uvicorn's own list (0.29+); absent in a later version, the signal is re-raised.
            captured = getattr(self, "_captured_signals", None)
            if isinstance(captured, list):
                captured.clear()


def database_line(url: str) -> str:
    """The store a server opened, for its startup log: the SQLite file as an absolute path (a
    relative URL is relative to where the server started), or the PostgreSQL URL without its
    password. `config show` prints the setting; this is what the running server uses."""
    if url.startswith("sqlite:///"):
        path = sqlite_path(url)
        if path == ":memory:":
            return "database SQLite in memory: everything stored is lost when the server stops"
        return f"database SQLite {os.path.abspath(Path(path).expanduser())}"
    return f"database PostgreSQL {mask_url(url)}"


async def _check_opens(settings: ServerSettings) -> None:
    async with open_runtime(settings):
        pass


async def _serve(settings: ServerSettings) -> None:
    opened: list[Runtime] = []

    @asynccontextmanager
    async def already_open(_: ServerSettings, __: SearchObserver) -> AsyncIterator[Runtime]:
        yield opened[0]

    app = create_app(settings, runtime_factory=already_open)
    observer = app.state.powercontext.metrics.observe_search
    async with open_runtime(settings, search_observer=observer) as runtime:
        opened.append(runtime)
        _log.info(database_line(settings.database.resolved_url()))
        config = uvicorn.Config(app, **_uvicorn_options(settings))
        await _Server(config).serve()
