"""One way for every command to report a failure: a red line on stderr and a non-zero exit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from pydantic import ValidationError

from powercontext.cli.output import print_error
from powercontext.memory.errors import ConfigurationError, PowerContextError

EXIT_FAILURE = 1
EXIT_CONFIGURATION = 2


@contextmanager
def fail_on_errors() -> Iterator[None]:
    try:
        yield
    except ConfigurationError as exc:
        print_error("configuration_error", str(exc))
        raise typer.Exit(EXIT_CONFIGURATION) from exc
    except PowerContextError as exc:
        code = getattr(exc, "code", "error")
        message = getattr(exc, "message", None) or str(exc)
        print_error(str(code), str(message))
        raise typer.Exit(EXIT_FAILURE) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "input"
        print_error("validation_error", f"{where}: {first['msg']}")
        raise typer.Exit(EXIT_FAILURE) from exc
