"""What every `powercontext memory` command shares: its options and how it runs."""

from __future__ import annotations

import functools
import inspect
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields
from typing import Annotated, Any, BinaryIO, TypeVar, get_type_hints

import typer
from pydantic import ValidationError

from powercontext.cli.backends import CliMemory, Target, open_memory
from powercontext.cli.errors import fail_on_errors
from powercontext.cli.running import run_async
from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.values import SearchMode

T = TypeVar("T")

Scope = Annotated[str, typer.Option("--scope", "-s", help="The scope id.")]
Citation = Annotated[
    str, typer.Argument(help="The entry's current version, as REVISION:ENTRY_ID:VERSION_ID.")
]
Local = Annotated[
    bool,
    typer.Option(
        "--local", help="Use the embedded store (POWERCONTEXT_SERVER_* settings), not a server."
    ),
]
ServerUrl = Annotated[
    str | None,
    typer.Option(
        "--server-url",
        envvar="POWERCONTEXT_CLIENT_SERVER_URL",
        help="The server (default http://127.0.0.1:8000).",
        show_envvar=True,
    ),
]
ApiKey = Annotated[
    str | None,
    typer.Option(
        "--api-key", envvar="POWERCONTEXT_CLIENT_API_KEY", help="Bearer API key.", show_envvar=True
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
FilterOption = Annotated[
    str | None,
    typer.Option(
        "--filter",
        help='A JSON filter, e.g. \'{"kinds": ["fact"], "metadata": {"project": {"eq": "x"}}}\'.',
    ),
]
HitLimit = Annotated[int, typer.Option(min=1, max=100, help="Maximum hits (per query).")]
# A Literal, so a bad value is a usage error (exit 2) like every other bad option value.
ModeName = Annotated[
    SearchMode,
    typer.Option(help="auto: hybrid when every active entry has a vector, else fts."),
]
ExpectedRevision = Annotated[
    int | None, typer.Option(help="Refuse unless the scope is at this revision.")
]
Reason = Annotated[str | None, typer.Option(help="Recorded in the change log.")]
IdempotencyKey = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key",
        help="Makes a retry safe: the same key and body again returns the original result "
        "and writes nothing; the same key with another body fails (idempotency_conflict). "
        "Keys are per scope.",
    ),
]
Thread = Annotated[
    str | None, typer.Option(help="The conversation, session or document it belongs to.")
]
OccurredAt = Annotated[
    str | None, typer.Option(help="When the event happened (ISO 8601; default: now).")
]
SearchRevision = Annotated[
    int | None, typer.Option(min=1, help="Search as of this revision (default the head).")
]
AsOfRevision = Annotated[
    int | None, typer.Option(min=1, help="Read as of this revision (default the head).")
]
MinScore = Annotated[float | None, typer.Option(help="Full-text floor on the raw BM25 score.")]
MinSimilarity = Annotated[
    float | None, typer.Option(min=-1.0, max=1.0, help="Vector floor on cosine similarity.")
]


REQUEST_OPTIONS = {
    name: "--" + name.replace("_", "-")
    for name in (
        "kind",
        "metadata",
        "expected_revision",
        "reason",
        "thread",
        "occurred_at",
        "idempotency_key",
        "limit",
        "mode",
        "revision",
        "min_score",
        "min_similarity",
    )
}
"""The request fields the memory commands take from options, by the option's name: given to
`fail_on_errors`, a validation error names what the user typed (`--min-score`, not
`min_score`)."""


@dataclass(frozen=True)
class Connection:
    """Where a command's Memory is (a server, or the embedded store with --local) and whether
    to print JSON: the options every memory command shares."""

    target: Target
    as_json: bool

    def run(self, scope: str, work: Callable[[CliMemory], Awaitable[T]]) -> T:
        """Run `work` on the scope's Memory; a failure is reported and exits non-zero."""

        async def go() -> T:
            async with open_memory(self.target, scope) as memory:
                return await work(memory)

        with fail_on_errors():
            return run_async(go())


Command = Callable[..., None]


def _with_group(
    name: str, options: list[inspect.Parameter], build: Callable[..., Any]
) -> Callable[[Command], Command]:
    """Give a command `options` after its own, passed to it as one argument `name`, built by
    `build(**values)`: options several commands share are declared once."""

    def decorate(command: Command) -> Command:
        own = inspect.signature(command, eval_str=True).parameters.values()

        @functools.wraps(command)
        def with_options(*args: Any, **kwargs: Any) -> None:
            values = {option.name: kwargs.pop(option.name) for option in options}
            command(*args, **kwargs, **{name: build(**values)})

        # Typer reads the options from the signature.
        with_options.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [*(p for p in own if p.name != name), *options]
        )
        return with_options

    return decorate


def option_group(name: str, group: type[Any]) -> Callable[[Command], Command]:
    """The options of a dataclass whose fields are typer options (annotated, with defaults),
    given to a command as one `name: group` argument."""
    hints = get_type_hints(group, include_extras=True)
    options = [
        inspect.Parameter(
            field.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=field.default,
            annotation=hints[field.name],
        )
        for field in fields(group)
    ]
    return _with_group(name, options, group)


@dataclass(frozen=True)
class Change:
    """What a write records and expects besides its own content (retire, revise, reactivate;
    forget's options extend it)."""

    reason: Reason = None
    expected_revision: ExpectedRevision = None
    idempotency_key: IdempotencyKey = None

    def recorded(self) -> dict[str, Any]:
        """These options as the fields of the write's request, which are named alike (a
        subclass's own options, such as forget's --yes, are not among them)."""
        return {field.name: getattr(self, field.name) for field in fields(Change)}


changed = option_group("change", Change)
"""Give a command `--reason`, `--expected-revision` and `--idempotency-key` as one
`change: Change` argument."""


@dataclass(frozen=True)
class SearchOptions:
    """What a search asks besides its query: `search` and `search-batch` take these alike (in
    a batch, each applies to every query)."""

    limit: HitLimit = 10
    mode: ModeName = "auto"
    revision: SearchRevision = None
    where: FilterOption = None
    min_score: MinScore = None
    min_similarity: MinSimilarity = None

    def request_fields(self) -> dict[str, Any]:
        """The fields of a `SearchMemoryRequest` but its query; raises MemoryValidationError."""
        return {
            "limit": self.limit,
            "mode": self.mode,
            "revision": self.revision,
            "filter": filter_object(self.where),
            "min_score": self.min_score,
            "min_similarity": self.min_similarity,
        }


search_options = option_group("options", SearchOptions)
"""Give a command the search options (--limit, --mode, --revision, --filter, --min-score,
--min-similarity) as one `options: SearchOptions` argument."""


def _connection(
    local: bool, server_url: str | None, api_key: str | None, as_json: bool
) -> Connection:
    return Connection(Target(local, server_url, api_key), as_json)


memory_command = _with_group(
    "connection",
    [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=option)
        for name, default, option in (
            ("local", False, Local),
            ("server_url", None, ServerUrl),
            ("api_key", None, ApiKey),
            ("as_json", False, AsJson),
        )
    ],
    _connection,
)
"""Give a command the shared options (--local, --server-url, --api-key, --json), after its
own, as one `connection` argument: each command then declares only what is its own."""


STDIN = "-"


def read_stdin() -> str:
    """All of stdin as UTF-8 whatever the locale, as `import -` reads it: a latin-1 or cp1252
    locale decoded `café` piped in as `cafÃ©` and stored it so. Bytes that are not UTF-8
    raise UnicodeDecodeError (one line from fail_on_errors). Newlines read as text mode does."""
    buffer: BinaryIO | None = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text-only stream put in place of stdin
        return sys.stdin.read()
    text = buffer.read().decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def text_argument(value: str) -> str:
    """An entry's text as given, or read from stdin for `-` (`cat notes.md | powercontext
    memory remember - --scope s`), without the final newline a pipe adds."""
    if value != STDIN:
        return value
    return read_stdin().rstrip("\n")


def metadata_object(value: str | None) -> dict[str, Any]:
    if value is None:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise MemoryValidationError("--metadata must be a JSON object") from exc
    if not isinstance(parsed, dict):
        raise MemoryValidationError("--metadata must be a JSON object")
    return parsed


def filter_object(value: str | None) -> MemoryFilter | None:
    if value is None:
        return None
    try:
        return MemoryFilter.model_validate_json(value)
    except ValidationError as exc:
        # The field's path, as the API's message gives it: "Extra inputs are not permitted"
        # alone did not say which key of a nested filter was wrong.
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise MemoryValidationError(
            f"--filter: {where + ': ' if where else ''}{first['msg']}"
        ) from exc
