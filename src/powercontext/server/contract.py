"""The OpenAPI contract: generated from the app, committed as YAML, served from the file.

`openapi/powercontext.yaml` at the repository root is the source of truth. The app serves it
when it can find it (the repository checkout, or a copy packaged next to this module) and
otherwise falls back to the schema it generates. A test asserts the three agree.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from powercontext import __version__

TITLE = "PowerContext"
DESCRIPTION = """\
Durable, revisioned Memory for AI agents, with hybrid search and optional listwise reranking.

Every request names a `scope_id` in its JSON body. With authentication enabled, send
`Authorization: Bearer <key>`; a key may use only the scopes it was configured for (403 on
any other). Every response carries `X-Request-ID` (echoed when the client sends a plain id of
at most 128 characters `[A-Za-z0-9._:-]`, else generated). Errors use one envelope:
`{"error": {"code", "message", "details"}}`.

Bodies larger than POWERCONTEXT_SERVER_HTTP_MAX_BODY_BYTES (default 4 MiB) are refused with
413 before they are parsed; `remember` bodies (one entry or a batch) and `/mcp` bodies larger
than POWERCONTEXT_SERVER_HTTP_MAX_WRITE_BODY_BYTES (default 1 MiB). Split larger batches into
several requests.
"""

SERVERS = [
    {
        "url": "http://127.0.0.1:8000",
        "description": "`powercontext server run` with its defaults (POWERCONTEXT_SERVER_HTTP_*)",
    }
]
LICENSE = {"name": "Apache-2.0", "identifier": "Apache-2.0"}
MALFORMED_REQUEST = {
    "description": "Malformed HTTP request, refused by the HTTP server before any route runs "
    "(plain text, not the error envelope).",
}

REPO_CONTRACT = Path(__file__).resolve().parents[3] / "openapi" / "powercontext.yaml"
PACKAGED_CONTRACT = Path(__file__).resolve().with_name("powercontext.yaml")
_INT64_MAX = 2**63 - 1


def _exact_integer_bounds(node: Any) -> None:
    """FastAPI's OpenAPI models hold `minimum`/`maximum` as floats, which turns the revision
    bound 2**63 - 1 into 2.0**63 (one past it) and every integer bound into `0.0`-style
    numbers. Integer schemas get integer bounds back; none of ours exceeds a signed int64."""
    if isinstance(node, dict):
        if node.get("type") == "integer":
            for key in ("minimum", "maximum"):
                value = node.get(key)
                if isinstance(value, float) and value.is_integer():
                    node[key] = min(int(value), _INT64_MAX)
        for child in node.values():
            _exact_integer_bounds(child)
    elif isinstance(node, list):
        for child in node:
            _exact_integer_bounds(child)


RAW_SCHEMAS = "x-powercontext-schemas"
"""Where a raw route (server/routes.py) leaves the models its request body refers to: FastAPI
knows no body model of a route that reads its own body, so they are moved to components."""


def generate_openapi(app: FastAPI) -> dict[str, Any]:
    """The schema of the app's routes, independent of any runtime configuration."""
    schema = get_openapi(
        title=TITLE,
        version=__version__,
        description=DESCRIPTION,
        routes=app.routes,
        servers=SERVERS,
        license_info=LICENSE,
        separate_input_output_schemas=False,
    )
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            _complete(operation)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, model in operation.pop(RAW_SCHEMAS, {}).items():
                components.setdefault(name, model)
    _exact_integer_bounds(schema)
    return schema


def _complete(operation: dict[str, Any]) -> None:
    # The bearer key is required only when auth is enabled: the empty requirement says so.
    # Operations without a key (health, readiness, metrics) say so with an empty list.
    security = operation.setdefault("security", [])
    if security and {} not in security:
        security.append({})
    # Every operation can be refused; routes without their own 4xx still meet the server's.
    responses = operation.setdefault("responses", {})
    if not any(str(status).startswith("4") for status in responses):
        responses["400"] = dict(MALFORMED_REQUEST)


def render_yaml(schema: dict[str, Any]) -> str:
    return yaml.safe_dump(schema, sort_keys=False, allow_unicode=True, width=100)


def contract_path() -> Path | None:
    for path in (REPO_CONTRACT, PACKAGED_CONTRACT):
        if path.is_file():
            return path
    return None


@lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} is not an OpenAPI document")
    return loaded


def load_contract() -> dict[str, Any] | None:
    """The committed contract, or None when this installation does not ship it."""
    path = contract_path()
    if path is None:
        return None
    return _load(path, path.stat().st_mtime_ns)
