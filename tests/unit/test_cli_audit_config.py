"""`powercontext config show` masks every credential a URL-valued setting carries, not only
the database's and the client's."""

from __future__ import annotations

import json

from powercontext.cli import app
from tests.unit.cli_local import runner

SECRETS = ("pw-endpoint", "pw-base", "pw-query", "pw@db", "pw-client")


def test_every_url_setting_is_shown_without_its_password() -> None:
    env = {
        "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENDPOINT_URL": "http://u:pw-endpoint@x/rerank",
        "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL": "openai-compatible:m",
        "POWERCONTEXT_SERVER_INFERENCE_GENERATION_BASE_URL": "http://k:pw-base@127.0.0.1:8080/v1",
        # libpq's URL takes the password as a parameter too; a password may hold `@`.
        "POWERCONTEXT_SERVER_DATABASE_URL": "postgresql://u:pw@db@h/db?sslmode=require&Password=pw-query",
        "POWERCONTEXT_CLIENT_SERVER_URL": "http://a:pw-client@h:1",
    }
    for flags in (["--json"], []):
        result = runner.invoke(app, ["config", "show", *flags], env=env)
        assert result.exit_code == 0, result.output
        leaked = [secret for secret in SECRETS if secret in result.stdout]
        assert leaked == [], leaked
    shown = json.loads(runner.invoke(app, ["config", "show", "--json"], env=env).stdout)
    assert shown["POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENDPOINT_URL"] == (
        "http://u:********@x/rerank"
    )
    assert shown["POWERCONTEXT_SERVER_DATABASE_URL"] == (
        "postgresql://u:********@h/db?sslmode=require&Password=********"
    )
