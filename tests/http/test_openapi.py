"""The committed contract, the served schema and the app's generated schema are one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from powercontext.server import create_app
from powercontext.server.contract import REPO_CONTRACT, generate_openapi
from tests.http.conftest import Served

COMMITTED = Path(__file__).resolve().parents[2] / "openapi" / "powercontext.yaml"
MEMORY_ERRORS = {"401", "403", "413", "422", "500", "503"}


def _committed() -> dict[str, Any]:
    loaded = yaml.safe_load(COMMITTED.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_served_schema_equals_committed_and_generated(open_server: Served) -> None:
    assert REPO_CONTRACT == COMMITTED
    served = Served.client(open_server).get("/openapi.json").json()
    generated = generate_openapi(create_app())
    committed = _committed()
    assert served == committed, "served schema differs from openapi/powercontext.yaml"
    assert generated == committed, (
        "the app's schema changed: run `powercontext server openapi > openapi/powercontext.yaml`"
    )


def test_docs_are_served_from_local_assets_under_a_csp(open_server: Served) -> None:
    """Issue 19 item 9: no CDN (the page works offline), no inline script, a strict CSP."""
    with open_server.client() as client:
        docs = client.get("/docs")
        assert docs.status_code == 200
        csp = docs.headers["content-security-policy"]
        assert "script-src 'self';" in csp and "default-src 'none'" in csp
        sources = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
        assert sources and all(s.startswith("/docs/static/") for s in sources), sources
        assert "<script>" not in docs.text  # every script is a file the CSP allows
        for source in sources:
            asset = client.get(source)
            assert asset.status_code == 200 and asset.content, source
        start = client.get("/docs/static/start.js").text
        assert "/openapi.json" in start
        assert "SwaggerUIBundle" in client.get("/docs/static/swagger-ui-bundle.js").text
        assert client.get("/docs/static/../../pyproject.toml").status_code == 404
        assert client.get("/docs/static/index.html").status_code == 404


def test_every_memory_operation_documents_its_errors() -> None:
    paths = _committed()["paths"]
    memory = {
        p: ops.get("post") or ops["get"] for p, ops in paths.items() if p.startswith("/v1/memory/")
    }
    assert set(memory) == {
        f"/v1/memory/{name}"
        for name in (
            "remember",
            "remember/stream",
            "search",
            "search/batch",
            "entries/list",
            "entries/get",
            "entries/revise",
            "entries/retire",
            "entries/reactivate",
            "entries/by-id",
            "entries/history",
            "changes",
            "head",
            "forget",
            "export",
            "import",
        )
    }
    for path, operation in memory.items():
        responses = set(operation["responses"])
        assert responses >= MEMORY_ERRORS, path
        for status in responses - {"200"}:
            ref = operation["responses"][status]["content"]["application/json"]["schema"]["$ref"]
            assert ref.endswith("/ErrorEnvelope"), (path, status)
    assert {"502", "504"} <= set(memory["/v1/memory/search"]["responses"])
    assert {"502", "504"} <= set(memory["/v1/memory/search/batch"]["responses"])
    assert "409" in memory["/v1/memory/remember"]["responses"]
    assert {"404", "409", "410"} <= set(memory["/v1/memory/forget"]["responses"])
    assert "410" in memory["/v1/memory/entries/get"]["responses"]
    assert "410" in memory["/v1/memory/entries/by-id"]["responses"]
    assert "409" in memory["/v1/memory/import"]["responses"]
    assert "404" in memory["/v1/memory/export"]["responses"]


def test_every_field_is_documented() -> None:
    schemas = _committed()["components"]["schemas"]
    undocumented = [
        f"{name}.{field}"
        for name, schema in schemas.items()
        for field, spec in schema.get("properties", {}).items()
        if "description" not in spec and name != "ErrorEnvelope"
    ]
    assert undocumented == []
    codes = schemas["ErrorBody"]["properties"]["code"]["enum"]
    assert {
        "validation_error",
        "capability_not_supported",
        "revision_conflict",
        "not_found",
        "erased",
        "unauthorized",
        "forbidden",
        "payload_too_large",
        "inference_timeout",
        "inference_unavailable",
        "inference_invalid_output",
        "internal_error",
    } <= set(codes)
    search = schemas["SearchRequest"]["properties"]
    assert search["limit"]["maximum"] == 100 and search["query"]["maxLength"] == 8192


def test_contract_passes_the_lint_rules_a_new_user_runs() -> None:
    """What `npx @redocly/cli lint openapi/powercontext.yaml` (recommended rules) checks and
    this contract once failed: servers present, a license, security declared on every
    operation (empty where no key is needed), and a 4xx response on every operation."""
    committed = _committed()
    assert committed.get("servers") and all(server.get("url") for server in committed["servers"])
    assert committed["info"].get("license", {}).get("name")
    operations = [
        (path, method, operation)
        for path, methods in committed["paths"].items()
        for method, operation in methods.items()
    ]
    assert operations
    for path, method, operation in operations:
        assert "security" in operation, f"{method} {path}: no security"
        responses = operation["responses"]
        assert any(str(status).startswith("4") for status in responses), f"{method} {path}"
        assert operation.get("operationId"), f"{method} {path}"
    open_routes = {path for path, _, operation in operations if operation["security"] == []}
    assert open_routes == {"/v1/health", "/v1/ready", "/metrics"}
