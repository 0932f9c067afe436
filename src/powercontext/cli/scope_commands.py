"""`powercontext memory scopes`: the scopes this key may use, with head and entry count."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from powercontext.cli import output
from powercontext.cli.errors import fail_on_errors
from powercontext.cli.memory_options import ApiKey, AsJson, Local, ServerUrl
from powercontext.cli.running import local_runtime, run_async
from powercontext.memory.scopes import ScopeSummary


async def _scopes(
    local: bool, server_url: str | None, api_key: str | None
) -> tuple[ScopeSummary, ...]:
    if local:
        async with local_runtime() as runtime:
            return await runtime.memory.scopes()
    from powercontext.client import PowerContextClient

    async with PowerContextClient(server_url, api_key=api_key) as client:
        return await client.memory.scopes()


def scopes(
    local: Local = False,
    server_url: ServerUrl = None,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """List the scopes this key may use, with head revision and active entry count."""
    with fail_on_errors():
        found = run_async(_scopes(local, server_url, api_key))
    if as_json:
        output.print_json({"scopes": [s.model_dump(mode="json") for s in found]})
        return
    table = Table("scope", "head", "entries")
    for summary in found:
        # Text: a cell's string is markup, and a scope id such as `team[/]a` is not.
        table.add_row(
            Text(summary.scope_id), str(summary.memory_ref.revision), str(summary.entry_count)
        )
    output.console.print(table)
