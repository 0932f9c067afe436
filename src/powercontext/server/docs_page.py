"""/docs: Swagger UI served from this installation, under a Content-Security-Policy.

FastAPI's default page loads Swagger UI from a CDN: blank offline, and a third party's script
running next to the API. The assets come from the `swagger-ui-bundle-v2` wheel instead (Swagger
UI 5: version 4, in `swagger-ui-bundle`, cannot render OpenAPI 3.1), and the page's own
start-up code is a static file too, so the policy allows scripts from this origin only (no
inline script). tests/ui/test_docs_browser.py renders it in Chromium.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter
from starlette.responses import Response

from powercontext.memory.errors import NotFoundError
from powercontext.server.html_page import html_page

DOCS_PATH = "/docs"
_STATIC = DOCS_PATH + "/static"
# Swagger UI sets inline style attributes, hence 'unsafe-inline' for styles only; it fetches
# /openapi.json from this origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
# X-Frame-Options for browsers that ignore frame-ancestors: no page may frame the docs.
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
_START = """\
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
"""
_PAGE = html_page(
    "PowerContext API",
    head=f"""
<link rel="stylesheet" href="{_STATIC}/swagger-ui.css">
<link rel="icon" href="{_STATIC}/favicon-32x32.png">
""",
    body=f"""
<div id="swagger-ui"></div>
<script src="{_STATIC}/swagger-ui-bundle.js"></script>
<script src="{_STATIC}/start.js"></script>
""",
)


def _assets_dir() -> Path:
    from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

    return Path(str(swagger_ui_path))


@lru_cache(maxsize=len(ASSETS))
def _asset(name: str) -> bytes:
    return (_assets_dir() / name).read_bytes()


docs_router = APIRouter(include_in_schema=False)


@docs_router.get(DOCS_PATH)
async def docs_page() -> Response:
    return Response(_PAGE, media_type="text/html; charset=utf-8", headers=_HEADERS)


@docs_router.get(_STATIC + "/{name}")
async def docs_asset(name: str) -> Response:
    if name == "start.js":
        return Response(_START, media_type="text/javascript; charset=utf-8", headers=_HEADERS)
    media_type = ASSETS.get(name)
    if media_type is None:
        raise NotFoundError("no such documentation file")
    headers = _HEADERS | {"Cache-Control": "public, max-age=86400"}
    return Response(_asset(name), media_type=media_type, headers=headers)
