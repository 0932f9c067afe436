"""Scope export and import over HTTP v1: JSON lines streamed both ways (see memory.transfer).

Both are raw routes of the operations table: the export is written as the scope is read,
and the import body is parsed line by line as it arrives, so the request middleware leaves
it unbuffered (`streaming_paths` in app.py) and each line is bounded instead
(MAX_LINE_BYTES). Their query parameters are validated with `ExportQuery` / `ImportQuery`,
which the table also documents.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote_to_bytes

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from powercontext.memory.iso_time import IsoDateTime
from powercontext.memory.transfer import (
    FORMAT,
    FORMAT_VERSION,
    OnExisting,
    split_lines,
)
from powercontext.memory.values import MAX_REVISION
from powercontext.server.calls import Call
from powercontext.server.gate import arriving
from powercontext.server.schemas import (
    AsOfRevision,
    JsonInt,
    MemoryRefModel,
    WireScopeId,
    _int_field,
    _Wire,
)

NDJSON = "application/x-ndjson"
ExportRevision = Annotated[int | None, Field(ge=1, le=MAX_REVISION)]
"""The revision to export (null: the head). Lax, unlike the `AsOfRevision` of the JSON
requests: the export query carries it as text."""


class ExportQuery(_Wire):
    """The query of GET /v1/memory/export."""

    scope_id: WireScopeId = Field(description="The scope to export.")
    revision: ExportRevision = Field(
        default=None, description="The revision to export (default the head)."
    )


class ImportQuery(_Wire):
    """The query of POST /v1/memory/import."""

    scope_id: WireScopeId = Field(description="The scope to import into.")
    on_existing: OnExisting = Field(
        default="fail",
        description="An entry id the scope holds already: `fail` (409, the default; batches "
        "before it stay written), `skip` it, or `replace` it with the imported version. With "
        "`skip`, re-running an interrupted import completes it.",
    )


class ExportHeaderModel(_Wire):
    """Line 1 of an export (JSON lines): the entry lines follow, in write order. An import
    reads the body as it arrives, each line at most 256 KiB (413 beyond); the body as a whole
    has no size limit."""

    format: str = Field(description=f"Always {FORMAT!r}.")
    version: int = Field(
        description=f"The format version the export was written in ({FORMAT_VERSION}); "
        "an import refuses versions it does not know."
    )
    scope_id: str = Field(description="The scope exported.")
    revision: int = Field(ge=1, description="The revision exported.")
    entry_count: int = Field(ge=0, description="Entry lines that follow the header.")
    exported_at: IsoDateTime = Field(description="When the export was made (UTC).")


class ExportedEntryModel(_Wire):
    """Every line after the header: one entry."""

    entry_id: str = Field(description="Kept by an import (1-128 printable characters).")
    kind: str = Field(description="The entry's kind.")
    text: str = Field(description="The entry's text.")
    metadata: dict[str, Any] = Field(description="The entry's metadata.")
    thread: str | None = Field(default=None, description="Its thread, if any.")
    occurred_at: IsoDateTime | None = Field(
        default=None, description="The event time: as written, else the write time."
    )
    created_at: IsoDateTime | None = Field(
        default=None, description="When the source wrote this version (informational)."
    )
    version: int | None = Field(
        default=None, ge=1, description="The version exported (informational)."
    )


ExportLine = ExportHeaderModel | ExportedEntryModel
"""One line of an export: the header first, then entries."""


class ImportResponse(_Wire):
    memory_ref: MemoryRefModel | None = Field(
        description="The scope's head after the import (null: an empty scope stayed empty)."
    )
    source: ExportHeaderModel = Field(description="The header of the imported export.")
    added: int = Field(ge=0, description="Entries written under ids new to the scope.")
    replaced: int = Field(ge=0, description="Existing entries given a new version (`replace`).")
    skipped: int = Field(ge=0, description="Existing entries left as they were (`skip`).")
    revisions: int = Field(
        ge=0,
        description="Revisions written: one per batch of up to 1000 lines (at most "
        "POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_ENTRIES); a batch of skipped entries writes none.",
    )


class ExportPageRequest(_Wire):
    """An export read a page at a time: what MCP offers, since a tool's answer is one bounded
    JSON message and cannot stream."""

    scope_id: WireScopeId = Field(description="The scope to export.")
    revision: AsOfRevision = Field(
        default=None,
        description="The revision to export (default the head). Pass the first page's "
        "`header.revision` when reading the next pages, so every page reads one revision.",
    )
    offset: JsonInt = _int_field(
        0, ge=0, description="Entry lines to skip: the previous page's `next_offset`."
    )
    limit: JsonInt = _int_field(200, ge=1, le=1000, description="Entries on this page.")


class ExportPageResponse(_Wire):
    header: ExportHeaderModel = Field(description="The export's header (the same every page).")
    entries: list[ExportedEntryModel] = Field(description="Entry lines, in write order.")
    next_offset: int | None = Field(
        description="The `offset` of the next page; null on the last page."
    )


class ImportEntriesRequest(_Wire):
    """An export's header and up to 1000 of its entries, imported as POST /v1/memory/import
    would (call it once per page of an export)."""

    scope_id: WireScopeId = Field(description="The scope to import into.")
    header: ExportHeaderModel = Field(description="The export's header.")
    entries: list[ExportedEntryModel] = Field(max_length=1000, description="Entries to write.")
    on_existing: OnExisting = Field(
        default="fail", description="As for POST /v1/memory/import: `fail`, `skip` or `replace`."
    )


async def export_page(call: Call, body: ExportPageRequest) -> ExportPageResponse:
    export = await call.memory(body.scope_id).export(revision=body.revision)
    entries: list[ExportedEntryModel] = []
    more = False
    async with aclosing(export.lines()) as lines:
        position = -1  # the header is line -1: entries count from 0
        async for line in lines:
            if position >= body.offset + body.limit:
                more = True
                break
            if position >= body.offset:
                entries.append(ExportedEntryModel.model_validate_json(line))
            position += 1
    return ExportPageResponse(
        header=ExportHeaderModel.model_validate(export.header.model_dump()),
        entries=entries,
        next_offset=body.offset + len(entries) if more else None,
    )


async def import_entries(call: Call, body: ImportEntriesRequest) -> ImportResponse:
    # An import checks the entry lines against the header's count (a truncated file is
    # refused); a page holds only some of the export's entries, so it announces its own.
    page = body.header.model_copy(update={"entry_count": len(body.entries)})
    lines = [page.model_dump_json(), *(e.model_dump_json() for e in body.entries)]
    memory = call.memory(body.scope_id)
    result = await memory.import_lines(lines, on_existing=body.on_existing)
    answer = ImportResponse.model_validate(result.model_dump())
    return answer.model_copy(update={"source": body.header})


Q = TypeVar("Q", bound=BaseModel)


def _query_error(name: str, message: str, type_: str = "value_error") -> RequestValidationError:
    """A 422 of one query parameter, `details.errors` included (loc `["query", name]`) as for
    a body's fields: the contract lists them for every validation_error."""
    loc = ("query", name) if name else ("query",)
    return RequestValidationError([{"loc": loc, "msg": message, "type": type_}])


def _decoded(raw: bytes, name: str) -> str:
    try:
        return unquote_to_bytes(raw.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _query_error(name, "not valid UTF-8 once percent-decoded") from exc


def query_parameters(raw: bytes) -> dict[str, str]:
    """The parameters of a query string, each given once and valid UTF-8.

    Starlette's parsing keeps the last of a repeated parameter and replaces undecodable bytes
    with U+FFFD: `scope_id=a&scope_id=b` or `scope_id=%FF` would silently name another scope
    than the client meant (and `%FF` would even create one)."""
    parameters: dict[str, str] = {}
    for part in raw.split(b"&"):
        if not part:
            continue
        name_raw, _, value_raw = part.partition(b"=")
        name = _decoded(name_raw, "")
        if not name:
            raise _query_error("", "a parameter has no name (`=value`)")
        if name in parameters:
            raise _query_error(name, "given more than once; give it once")
        parameters[name] = _decoded(value_raw, name)
    return parameters


def query_of(model: type[Q], request: Request) -> Q:
    """A raw route's query parameters as `model`; a 422 naming the parameter otherwise."""
    parameters = query_parameters(request.scope.get("query_string", b""))
    try:
        return model.model_validate(parameters)
    except ValidationError as exc:
        errors = [error | {"loc": ("query", *error["loc"])} for error in exc.errors()]
        raise RequestValidationError(errors) from exc


async def export_scope(call: Call, request: Request) -> Response:
    query = query_of(ExportQuery, request)
    memory = call.memory(query.scope_id)
    export = await memory.export(revision=query.revision)  # 404 before the stream starts
    return StreamingResponse(export.lines(), media_type=NDJSON)


async def import_scope(call: Call, request: Request) -> Response:
    query = query_of(ImportQuery, request)
    memory = call.memory(query.scope_id)
    seconds = call.runtime.settings.http.body_read_timeout_seconds
    lines = split_lines(arriving(request.stream(), seconds))
    result = await memory.import_lines(lines, on_existing=query.on_existing)
    answer = ImportResponse.model_validate(result.model_dump())
    return Response(answer.model_dump_json(), media_type="application/json")
