"""v1 scope export and import: JSON lines streamed both ways (see memory.transfer).

Both bodies are streams, not JSON documents: the export is written as it is read, and the
import is parsed line by line as it arrives. The request middleware therefore leaves the
import body unbuffered (STREAMING_PATHS); each line is bounded instead (MAX_LINE_BYTES).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import Field

from powercontext.memory.models import ScopeId
from powercontext.memory.transfer import (
    FORMAT,
    FORMAT_VERSION,
    MAX_LINE_BYTES,
    OnExisting,
    split_lines,
)
from powercontext.server.routes import Caller, _json, _operation_id, _responses, scoped_memory
from powercontext.server.schemas import MemoryRefModel, _Wire

NDJSON = "application/x-ndjson"
IMPORT_PATH = "/v1/memory/import"
STREAMING_PATHS = frozenset({IMPORT_PATH})
"""Routes whose request body the middleware must pass through unread."""

transfer_router = APIRouter(
    prefix="/v1/memory", tags=["memory"], generate_unique_id_function=_operation_id
)

_FORMAT_TEXT = (
    f"JSON lines ({NDJSON}). Line 1 is a header: `format` ({FORMAT!r}), `version` "
    f"({FORMAT_VERSION}), `scope_id`, `revision`, `entry_count`, `exported_at`. Each further "
    "line is one entry active at that revision, in write order: `entry_id`, `kind`, `text`, "
    "`metadata`, `thread`, `occurred_at` (the event time: as written, else the write time), "
    "`created_at` and `version` (informational)."
)

ScopeQuery = Annotated[ScopeId, Query(description="The scope.")]


class ExportHeaderModel(_Wire):
    format: str = Field(description=f"Always {FORMAT!r}.")
    version: int = Field(description="The format version the export was written in.")
    scope_id: str = Field(description="The scope exported.")
    revision: int = Field(ge=1, description="The revision exported.")
    entry_count: int = Field(ge=0, description="Entry lines that follow the header.")
    exported_at: datetime = Field(description="When the export was made (UTC).")


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


@transfer_router.get(
    "/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": _FORMAT_TEXT,
            "content": {NDJSON: {"schema": {"type": "string"}}},
        },
        **_responses(404),
    },
    summary="Export the entries of a scope as JSON lines, streamed",
)
async def export_scope(
    caller: Caller,
    request: Request,
    scope_id: ScopeQuery,
    revision: Annotated[
        int | None, Query(ge=1, description="The revision to export (default the head).")
    ] = None,
) -> Response:
    memory = scoped_memory(request, caller, scope_id)
    export = await memory.export(revision=revision)  # 404 before the stream starts
    return StreamingResponse(export.lines(), media_type=NDJSON)


_IMPORT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": f"An export, as GET /v1/memory/export writes it: {_FORMAT_TEXT} Read "
        f"as it arrives; each line is at most {MAX_LINE_BYTES} bytes (413 beyond), and the "
        "body as a whole has no size limit.",
        "content": {NDJSON: {"schema": {"type": "string"}}},
    }
}


@transfer_router.post(
    "/import",
    response_model=ImportResponse,
    responses=_responses(409, 413),
    openapi_extra=_IMPORT_BODY,
    summary="Import an export into a scope, keeping entry ids, one revision per batch",
)
async def import_scope(
    caller: Caller,
    request: Request,
    scope_id: ScopeQuery,
    on_existing: Annotated[
        OnExisting,
        Query(
            description="An entry id the scope holds already: `fail` (409, the default; "
            "batches before it stay written), `skip` it, or `replace` it with the imported "
            "version. With `skip`, re-running an interrupted import completes it."
        ),
    ] = "fail",
) -> Response:
    memory = scoped_memory(request, caller, scope_id)
    result = await memory.import_lines(split_lines(request.stream()), on_existing=on_existing)
    return _json(ImportResponse.model_validate(result.model_dump()))
