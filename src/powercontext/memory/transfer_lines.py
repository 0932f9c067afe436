"""The lines of an export (or of a streamed batch), read with a bound on each line.

Bytes from HTTP (`split_lines`) and text from a file or stdin (`text_lines`) alike are cut
into lines without ever holding more than one line (at most MAX_LINE_BYTES): an export can
be any size, and a file without newlines must not be read whole. `parse_line` turns one line
into a model, naming the line and the field a malformed one got wrong.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import IO, TypeVar

from pydantic import BaseModel, ValidationError

from powercontext.memory.errors import MemoryValidationError, PayloadTooLargeError

MAX_LINE_BYTES = 256 * 1024
"""The longest line an import (or a streamed batch) reads: an entry at its text and metadata
bounds fits even when every character is written as a six-byte JSON escape."""
BOM = "\ufeff"
"""A UTF-8 byte order mark, which Windows editors put before a file's first line."""

M = TypeVar("M", bound=BaseModel)


def _too_long(number: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(f"line {number} exceeds {MAX_LINE_BYTES} bytes")


def parse_line(line: str, number: int, model: type[M]) -> M:
    """`line` as `model`; a MemoryValidationError naming the line and field otherwise."""
    if len(line.rstrip("\r\n").encode("utf-8")) > MAX_LINE_BYTES:
        raise _too_long(number)
    try:
        raw = json.loads(line)
    except ValueError as exc:
        raise MemoryValidationError(f"line {number}: not JSON ({exc})") from exc
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        detail = f"{where}: {first['msg']}" if where else first["msg"]
        raise MemoryValidationError(f"line {number}: {detail}{more}") from exc


async def split_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """UTF-8 lines of a byte stream, as they complete: at most one line (bounded by
    MAX_LINE_BYTES) is held, however long the stream."""
    pending = bytearray()
    number = 0

    def decoded(raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MemoryValidationError(f"line {number}: not UTF-8") from exc

    async for chunk in chunks:
        pending += chunk
        while (end := pending.find(b"\n")) >= 0:
            number += 1
            raw = bytes(pending[:end])
            del pending[: end + 1]
            if len(raw) > MAX_LINE_BYTES:
                raise _too_long(number)
            yield decoded(raw)
        if len(pending) > MAX_LINE_BYTES:
            raise _too_long(number + 1)
    if pending:
        number += 1
        yield decoded(bytes(pending))


def text_lines(handle: IO[str]) -> Iterator[str]:
    """The lines of a text file, each read with a bound: a line longer than MAX_LINE_BYTES
    characters (so longer in bytes too) raises before the rest of it is read."""
    number = 0
    while True:
        try:
            line = handle.readline(MAX_LINE_BYTES + 2)  # room for "\r\n"
        except UnicodeDecodeError as exc:
            raise MemoryValidationError(f"not UTF-8 (at or after line {number + 1})") from exc
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_BYTES and len(line.rstrip("\r\n")) > MAX_LINE_BYTES:
            raise _too_long(number)
        yield line


async def numbered(lines: AsyncIterable[str] | Iterable[str]) -> AsyncIterator[tuple[int, str]]:
    """Each line with its number (from 1), from a stream or a list alike."""
    number = 0
    if isinstance(lines, AsyncIterable):
        async for line in lines:
            number += 1
            yield number, line
    else:
        for line in lines:
            number += 1
            yield number, line
