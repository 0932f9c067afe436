"""`powercontext server run|openapi`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from powercontext.cli.errors import fail_on_errors
from powercontext.cli.running import naming_the_database

app = typer.Typer(
    help="Run the HTTP v1 server, or print its OpenAPI contract.", no_args_is_help=True
)


@app.command()
def run(
    host: Annotated[
        str | None, typer.Option(help="Bind address (default POWERCONTEXT_SERVER_HTTP_HOST).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="Port (default POWERCONTEXT_SERVER_HTTP_PORT)."),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="Server processes sharing the port and the database (a file or PostgreSQL).",
        ),
    ] = 1,
) -> None:
    """Serve until interrupted (SIGINT/SIGTERM shut down gracefully).

    A non-loopback --host needs API keys, or
    POWERCONTEXT_SERVER_HTTP_ALLOW_UNAUTHENTICATED_PUBLIC_BIND=true.
    """
    with fail_on_errors():
        from powercontext.config import ServerSettings
        from powercontext.server import serve

        settings = ServerSettings()
        overrides = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
        if overrides:
            http = settings.http.model_copy(update=overrides)
            settings = settings.model_copy(update={"http": http})
        # Storage failures that end the server are failures to open it.
        with naming_the_database():
            serve(settings, workers=workers)


@app.command()
def openapi() -> None:
    """Print the OpenAPI contract the app generates, as YAML.

    `powercontext server openapi > openapi/powercontext.yaml` refreshes the committed contract.
    """
    with fail_on_errors():
        from powercontext.config import ServerSettings
        from powercontext.server import create_app
        from powercontext.server.contract import generate_openapi, render_yaml

        # Defaults, not the environment: the contract must not depend on local configuration.
        schema = generate_openapi(create_app(ServerSettings.model_construct()))
        sys.stdout.write(render_yaml(schema))
