"""Scope export and import over HTTP, streamed both ways (GET /v1/memory/export, POST
/v1/memory/import). Neither side holds the whole export: lines are yielded as they arrive and
sent as they are read.

Progress on import counts the lines sent, against the header's `entry_count`; the server
answers once it has written the last batch, and the final callback follows that answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

import httpx

from powercontext.client.errors import connection_failed, error_from_http, unexpected_answer
from powercontext.client.transport import NDJSON, scaled_timeout
from powercontext.memory.transfer import (
    IMPORT_BATCH_ENTRIES,
    ImportProgress,
    ImportResult,
    OnExisting,
)

EXPORT_PATH = "/v1/memory/export"
IMPORT_PATH = "/v1/memory/import"


class _Lines:
    """An export's body cut at b"\n" only. httpx's `iter_lines` cuts where `str.splitlines`
    does, at U+2028, U+2029 and U+0085 too, which JSON writes unescaped inside strings: an
    entry whose text held one came out as two broken lines."""

    def __init__(self) -> None:
        self.pending = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        self.pending += chunk
        lines: list[str] = []
        while (end := self.pending.find(b"\n")) >= 0:
            raw = bytes(self.pending[:end]).rstrip(b"\r")
            del self.pending[: end + 1]
            if raw:
                lines.append(raw.decode("utf-8") + "\n")
        return lines

    def close(self) -> list[str]:
        raw, self.pending = bytes(self.pending).rstrip(b"\r"), bytearray()
        return [raw.decode("utf-8") + "\n"] if raw else []


def _export_params(scope_id: str, revision: int | None) -> dict[str, Any]:
    return {"scope_id": scope_id} | ({} if revision is None else {"revision": revision})


class _LineCounter:
    """Turns lines into request body chunks, counting entry lines for progress."""

    def __init__(self, progress: ImportProgress | None) -> None:
        self.progress = progress
        self.sent = 0
        self.total: int | None = None
        self.header_seen = False

    def chunk(self, line: str) -> bytes | None:
        if not line.strip():
            return None
        if not self.header_seen:
            self.header_seen = True
            self.total = _entry_count(line)
        else:
            self.sent += 1
            if self.progress is not None and self.sent % 100 == 0:
                self.progress(self.sent, self.total)
        return (line if line.endswith("\n") else line + "\n").encode("utf-8")

    def finish(self, response: httpx.Response) -> ImportResult:
        if not response.is_success:
            raise error_from_http(response)
        if self.progress is not None:
            self.progress(self.sent, self.total)
        try:
            return ImportResult.model_validate(response.json())
        except ValueError as exc:  # not JSON, or not an ImportResult (pydantic's error)
            raise unexpected_answer(response, f"{type(exc).__name__}: {exc}") from exc


def _entry_count(header: str) -> int | None:
    """The header's announced count, for progress only: the server validates the header."""
    try:
        count = json.loads(header).get("entry_count")
    except (ValueError, AttributeError):
        return None
    return count if isinstance(count, int) else None


def _import_options(base: httpx.Timeout, scope_id: str, on_existing: OnExisting) -> dict[str, Any]:
    """The import POST's query, content type and timeout, for either client."""
    return {
        "params": {"scope_id": scope_id, "on_existing": on_existing},
        "headers": {"content-type": NDJSON},
        # The server may be writing a whole batch while the body waits.
        "timeout": scaled_timeout(base, IMPORT_BATCH_ENTRIES),
    }


async def export_lines(
    http: httpx.AsyncClient, scope_id: str, revision: int | None = None
) -> AsyncIterator[str]:
    """The export's lines, each ending with a newline; ApiError (e.g. not_found) before any."""
    try:
        async with http.stream(
            "GET", EXPORT_PATH, params=_export_params(scope_id, revision)
        ) as response:
            if not response.is_success:
                await response.aread()
                raise error_from_http(response)
            lines = _Lines()
            async for chunk in response.aiter_bytes():
                for line in lines.feed(chunk):
                    yield line
            for line in lines.close():
                yield line
    except httpx.TransportError as exc:
        raise connection_failed(exc) from exc


async def import_lines(
    http: httpx.AsyncClient,
    scope_id: str,
    lines: AsyncIterable[str] | Iterable[str],
    on_existing: OnExisting = "fail",
    progress: ImportProgress | None = None,
) -> ImportResult:
    counter = _LineCounter(progress)

    async def body() -> AsyncIterator[bytes]:
        if isinstance(lines, AsyncIterable):
            async for line in lines:
                if (chunk := counter.chunk(line)) is not None:
                    yield chunk
        else:
            for line in lines:
                if (chunk := counter.chunk(line)) is not None:
                    yield chunk

    try:
        options = _import_options(http.timeout, scope_id, on_existing)
        response = await http.post(IMPORT_PATH, content=body(), **options)
    except httpx.TransportError as exc:
        raise connection_failed(exc) from exc
    return counter.finish(response)


def export_lines_sync(
    http: httpx.Client, scope_id: str, revision: int | None = None
) -> Iterator[str]:
    try:
        with http.stream("GET", EXPORT_PATH, params=_export_params(scope_id, revision)) as response:
            if not response.is_success:
                response.read()
                raise error_from_http(response)
            lines = _Lines()
            for chunk in response.iter_bytes():
                yield from lines.feed(chunk)
            yield from lines.close()
    except httpx.TransportError as exc:
        raise connection_failed(exc) from exc


def import_lines_sync(
    http: httpx.Client,
    scope_id: str,
    lines: Iterable[str],
    on_existing: OnExisting = "fail",
    progress: ImportProgress | None = None,
) -> ImportResult:
    counter = _LineCounter(progress)

    def body() -> Iterator[bytes]:
        for line in lines:
            if (chunk := counter.chunk(line)) is not None:
                yield chunk

    try:
        options = _import_options(http.timeout, scope_id, on_existing)
        response = http.post(IMPORT_PATH, content=body(), **options)
    except httpx.TransportError as exc:
        raise connection_failed(exc) from exc
    return counter.finish(response)
