"""POST /v1/memory/remember/stream: a batch of any size up to the runtime's bound, one entry
per line (JSON lines), written in one revision.

The JSON remember route keeps its 1 MiB body limit because parsing one large JSON document
holds the GIL and stalls every other request. This route reads its body as it arrives and
parses a line at a time, so a 10,000-entry `remember_many` stays one call and one revision
(all or nothing) over HTTP, as it is in process. What it holds is bounded twice: each line by
MAX_LINE_BYTES, the whole body by HTTP_MAX_REMEMBER_STREAM_BYTES, and the entry count by
RUNTIME_MAX_BATCH_ENTRIES (413 beyond any of them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from pydantic import Field, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from powercontext.memory.errors import MemoryValidationError, PayloadTooLargeError
from powercontext.memory.models import RememberMemoryRequest
from powercontext.memory.transfer import split_lines
from powercontext.memory.values import MAX_REVISION, IdempotencyKey, ScopeId
from powercontext.server import translate
from powercontext.server.calls import Call
from powercontext.server.gate import arriving
from powercontext.server.schemas import (
    _EXPECTED,
    _IDEMPOTENCY,
    RememberEntryModel,
    WriteResultModel,
    _Wire,
)
from powercontext.server.transfer import query_of

_ENTRY = TypeAdapter(RememberEntryModel)


class RememberStreamQuery(_Wire):
    """The query of POST /v1/memory/remember/stream; the body holds the entries."""

    scope_id: ScopeId = Field(description="The scope to write to.")
    # Lax integers: a query string carries them as text. For the whole batch, as in JSON.
    expected_revision: int | None = Field(None, ge=0, le=MAX_REVISION, description=_EXPECTED)
    idempotency_key: IdempotencyKey | None = Field(None, description=_IDEMPOTENCY)


def _entry(line: str, number: int) -> RememberEntryModel:
    try:
        return _ENTRY.validate_json(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        detail = f"{where}: {first['msg']}" if where else first["msg"]
        raise MemoryValidationError(f"line {number}: {detail}") from exc


async def remember_stream(call: Call, request: Request) -> Response:
    query = query_of(RememberStreamQuery, request)
    memory = call.memory(query.scope_id)  # refuses a scope the key may not use, before reading
    async with call.state.stream_writes:
        written = await memory.remember_many(await _entries(request, query, call))
    answer = translate.to_wire(WriteResultModel, written)
    return Response(answer.model_dump_json(), media_type="application/json")


async def _entries(
    request: Request, query: RememberStreamQuery, call: Call
) -> list[RememberMemoryRequest]:
    settings = call.runtime.settings
    max_entries = settings.runtime.max_batch_entries
    max_bytes = settings.http.max_remember_stream_bytes
    requests: list[RememberMemoryRequest] = []
    number = 0
    body = arriving(request.stream(), settings.http.body_read_timeout_seconds)
    async for line in split_lines(_bounded(body, max_bytes)):
        number += 1
        if number == 1:
            # Editors on Windows save JSON lines with a BOM; the JSON route accepts one too.
            line = line.removeprefix("\ufeff")
        if not line.strip():
            continue
        if len(requests) == max_entries:
            raise PayloadTooLargeError(
                f"more than {max_entries} entries in one batch "
                "(POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_ENTRIES): split it"
            )
        entry = _entry(line, number)
        requests.append(
            RememberMemoryRequest.model_construct(
                **dict(entry),
                expected_revision=query.expected_revision,
                idempotency_key=query.idempotency_key,
            )
        )
    if not requests:
        raise MemoryValidationError("the body holds no entry: send one JSON object per line")
    return requests


async def _bounded(chunks: AsyncIterator[bytes], max_bytes: int) -> AsyncIterator[bytes]:
    """The body's chunks, refused (413) once they pass `max_bytes` in all."""
    read = 0
    async for chunk in chunks:
        read += len(chunk)
        if read > max_bytes:
            raise PayloadTooLargeError(
                f"the body exceeds {max_bytes} bytes "
                "(POWERCONTEXT_SERVER_HTTP_MAX_REMEMBER_STREAM_BYTES)"
            )
        yield chunk
