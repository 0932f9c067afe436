"""A `--workers N` process that cannot start logs its cause as one line, not a traceback.

Driven through uvicorn's own lifespan handling on the worker's app factory (what each worker
process runs), in process: the supervisor needs seconds to notice a dead worker, and the
command's exit code 1 is covered by test_audit_ops_workers.py. The traceback stays available
at debug level."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from uvicorn import Config
from uvicorn.lifespan.on import LifespanOn

from powercontext.server.runner import worker_app


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def unopenable_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The environment a worker reads, naming a database under a file (it cannot be made);
    the root logger as it was, since the worker configures logging."""
    for name in os.environ:
        if name.upper().startswith("POWERCONTEXT_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no .env
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    monkeypatch.setenv("POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{blocker / 'x.db'}")
    monkeypatch.setenv("POWERCONTEXT_SERVER_INFERENCE_EMBEDDING_MODEL", "none")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield blocker
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


async def test_a_worker_that_cannot_start_logs_one_line(unopenable_database: Path) -> None:
    config = Config("powercontext.server.runner:worker_app", factory=True, lifespan="on")
    config.load()  # runs worker_app, which configures logging as a worker does
    records = _Records()
    root = logging.getLogger()
    root.addHandler(records)
    root.setLevel(logging.DEBUG)
    lifespan = LifespanOn(config)
    await lifespan.startup()
    assert lifespan.startup_failed and lifespan.should_exit

    errors = [r for r in records.records if r.levelno >= logging.ERROR]
    shown = [r.getMessage() for r in errors]
    assert all("\n" not in line and "Traceback" not in line for line in shown), shown
    assert all(r.exc_info is None for r in errors), shown
    cause = [line for line in shown if str(unopenable_database) in line]
    assert len(cause) == 1, shown
    assert cause[0].startswith("the server process could not start: storage_unavailable: ")
    # The stack is not lost: a debug record carries it.
    debug = [r for r in records.records if r.levelno == logging.DEBUG and r.exc_info]
    assert debug and debug[0].exc_info is not None
    assert str(unopenable_database) in str(debug[0].exc_info[1])


def test_the_worker_app_serves_http_unchanged(
    unopenable_database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the lifespan is wrapped: the app a worker serves is the one create_app builds."""
    monkeypatch.setenv(
        "POWERCONTEXT_SERVER_DATABASE_URL", f"sqlite:///{unopenable_database.parent / 'ok.db'}"
    )
    app = worker_app()
    from starlette.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/v1/health").status_code == 200
