"""The plain arguments of ScopedMemory's reads (revisions, limits, entry ids), checked with the
bounds the HTTP wire gives the same fields, so that in process a bad value is a
MemoryValidationError naming it: not a NotFoundError for revision 0, nor a storage error for
a revision beyond a 64-bit integer or an entry id with NUL (which PostgreSQL cannot hold).
A request of the wrong type (a string for a RememberMemoryRequest) is the SDK's TypeError
(client.wire), not an AttributeError from deep in the service."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel

from powercontext.memory.errors import MemoryValidationError
from powercontext.memory.values import MAX_ENTRY_ID_CHARS, MAX_REVISION

M = TypeVar("M", bound=BaseModel)


def _integer(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryValidationError(f"{name} must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        raise MemoryValidationError(f"{name} must be between {low} and {high}, not {value}")
    return value


def revision_argument(name: str, value: int | None, *, low: int = 1) -> int | None:
    """A revision (None: the head) within what either store can hold."""
    return None if value is None else _integer(name, value, low, MAX_REVISION)


def limit_argument(name: str, value: int, high: int) -> int:
    """A page size from 1 to `high`."""
    return _integer(name, value, 1, high)


def entry_id_argument(value: object) -> str:
    """An entry id as the wire takes it: 1 to 128 characters, no NUL."""
    if not isinstance(value, str):
        raise MemoryValidationError(f"entry_id must be a string, not {type(value).__name__}")
    if not 1 <= len(value) <= MAX_ENTRY_ID_CHARS or "\x00" in value:
        raise MemoryValidationError(
            f"entry_id must be 1 to {MAX_ENTRY_ID_CHARS} characters without NUL, "
            f"not {value[:40]!r}{'...' if len(value) > 40 else ''}"
        )
    return value


def request_argument(method: str, value: object, model: type[M]) -> M:
    """One request of `model`'s type; the message is the SDK's for the same mistake."""
    if not isinstance(value, model):
        raise TypeError(f"{method} takes a {model.__name__}, not {type(value).__name__}")
    return value


def requests_argument(method: str, values: object, model: type[M]) -> list[M]:
    """A batch of requests: a str, a dict or one request is not a batch of them (each would
    otherwise be iterated as one)."""
    if isinstance(values, str | bytes | dict | BaseModel) or not isinstance(values, Iterable):
        raise TypeError(f"{method} takes a list of {model.__name__}, not {type(values).__name__}")
    return [request_argument(method, value, model) for value in values]
