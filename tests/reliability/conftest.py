"""The live HTTP servers of tests/http (real uvicorn, real SQLite), reused here."""

from tests.http.conftest import auth_server, bare_server, fresh_scope, open_server

__all__ = ["auth_server", "bare_server", "fresh_scope", "open_server"]
