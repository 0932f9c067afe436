"""One way for every command to report a failure: a red line on stderr and a non-zero exit."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import typer
from pydantic import ValidationError

from powercontext.cli.output import print_error, stdout_closed
from powercontext.memory.errors import ConfigurationError, PowerContextError

EXIT_FAILURE = 1
EXIT_CONFIGURATION = 2

_KEY_HINT = "pass --api-key or set POWERCONTEXT_CLIENT_API_KEY"


@contextmanager
def fail_on_errors(options: Mapping[str, str] | None = None) -> Iterator[None]:
    """`options`: the command's option for a request field (`occurred_at` -> `--occurred-at`),
    so a validation error names what the user typed, not the model's field."""
    try:
        yield
    except ConfigurationError as exc:
        print_error("configuration_error", str(exc))
        raise typer.Exit(EXIT_CONFIGURATION) from exc
    except PowerContextError as exc:
        code = str(getattr(exc, "code", "error"))
        message = str(getattr(exc, "message", None) or str(exc))
        if code == "unauthorized" and "API_KEY" not in message:
            # The server's message names the HTTP header, which a CLI user does not write;
            # a message naming its own key variable (`powercontext mcp`) needs no other.
            message = f"{message}; {_KEY_HINT}"
        print_error(code, message)
        raise typer.Exit(EXIT_FAILURE) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(part) for part in first["loc"]]
        if loc and options and loc[0] in options:
            loc[0] = options[loc[0]]
        where = ".".join(loc) or "input"
        print_error("validation_error", f"{where}: {first['msg']}")
        raise typer.Exit(EXIT_FAILURE) from exc
    except UnicodeDecodeError as exc:
        # A file or stdin that is not UTF-8 (queries, an import, text from stdin).
        print_error(
            "validation_error", f"the input is not UTF-8 text (byte {exc.start}: {exc.reason})"
        )
        raise typer.Exit(EXIT_FAILURE) from exc
    except BrokenPipeError:
        stdout_closed()
