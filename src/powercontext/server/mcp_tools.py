"""The MCP tools, built from `OPERATIONS`: each one is an HTTP v1 operation's own models.

Each tool's input schema is its v1 request model's JSON schema and its output schema is the
v1 response model's (server/schemas.py), and a call runs the operation's handler through
`Operation.perform`, so the two surfaces cannot drift apart. The same tuple serves both transports:
streamable HTTP at `/mcp` and stdio (`powercontext mcp`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.types import Tool, ToolAnnotations
from pydantic import BaseModel

from powercontext.server.operations import OPERATIONS, McpTool, Operation

INSTRUCTIONS = (
    "PowerContext is durable, revisioned memory. Every tool names a `scope_id` (a tenant, "
    "project or agent); the API key must be allowed that scope. Search returns hits with "
    "citations; pass a citation to get_entry to read that exact version, to revise_entry to "
    "write a new version, or to retire_entry / reactivate_entry. entry_history and "
    "list_changes show what changed and when."
)


@dataclass(frozen=True, slots=True)
class MemoryTool:
    """One MCP tool: the operation it performs and the v1 request model it accepts."""

    name: str
    description: str
    request: type[BaseModel]
    operation: Operation
    annotations: ToolAnnotations

    @property
    def response(self) -> type[BaseModel]:
        return self.operation.response

    def describe(self) -> Tool:
        return Tool(
            name=self.name,
            title=self.annotations.title,
            description=self.description,
            input_schema=self.request.model_json_schema(mode="validation"),
            output_schema=self.response.model_json_schema(mode="serialization"),
            annotations=self.annotations,
        )


def _tool(operation: Operation, tool: McpTool) -> MemoryTool:
    read_only = not operation.writes
    annotations = ToolAnnotations(
        title=tool.title,
        read_only_hint=read_only,
        destructive_hint=tool.destructive,
        idempotent_hint=read_only,
        open_world_hint=False,
    )
    assert operation.handler is not None, f"{tool.name}: a tool needs the operation's handler"
    request = tool.request or operation.request
    assert isinstance(request, type), f"{tool.name}: a union request needs McpTool.request"
    return MemoryTool(tool.name, tool.description, request, operation, annotations)


MEMORY_TOOLS: tuple[MemoryTool, ...] = tuple(
    _tool(operation, tool) for operation in OPERATIONS for tool in operation.tools
)
