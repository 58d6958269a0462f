"""``pimem mcp``: pimem's agent tools (:mod:`pimem.agent_tools`) as an MCP server over stdio.

Built on the official SDK's ``Server`` (``mcp.server.lowlevel``, the server ``MCPServer`` wraps), which
serves both protocol eras on one stdio connection: the ``initialize`` handshake (up to 2025-11-25)
and the 2026-07-28 ``server/discover`` era. ``MCPServer`` would derive each tool's schema from a Python
signature and validate arguments with pydantic; pimem's tools are defined once as data in
``agent_tools`` (shared with the editor's language-model tool) and validated there with the messages
and limits of the CLI, so this adapter registers them as they are.

The adapter only decodes a call, runs it in a worker thread on a connection of its own (SQLite
readers never wait for a writer in WAL mode, so a running sync does not block a recall), and encodes
the result. Nothing happens at start-up but the SDK's import: no store is opened until a tool is
called, no sync runs (agents list the tools only once the server answers; Codex gives it a few
seconds). A failing call is a tool error with one line; the server keeps serving.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from pimem import __version__
from pimem.agent_tools import TOOLS, ToolCall, ToolInputError, ToolOutput, decode_call
from pimem.recall import dense
from pimem.store import StoreError, connect

log = logging.getLogger("pimem.mcp")

INSTRUCTIONS = ("pimem is the memory of this user's past conversations with their coding agents (Pi, Claude Code, "
                "Codex). Use recall_memory when the user refers to earlier work (\"last time we…\", \"didn't we "
                "fix…\"), then read_session to read around a result.")


def _tool_list() -> list[types.Tool]:
    hints = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                  open_world_hint=False)
    return [types.Tool(name=tool.name, title=tool.title, description=tool.description,
                       input_schema=tool.input_schema, output_schema=tool.output_schema, annotations=hints)
            for tool in TOOLS]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


class ToolRunner:
    """Runs decoded calls against the store at ``db_path`` (one short-lived connection per call)."""

    def __init__(self, db_path: Path, *, redact_secrets: bool) -> None:
        self.db_path = db_path
        self.redact_secrets = redact_secrets

    def run(self, call: ToolCall, cancel: threading.Event | None = None) -> ToolOutput:
        conn: sqlite3.Connection = connect(self.db_path, create=False, for_writing=False)
        try:
            return call.run(conn, cancel)
        finally:
            conn.close()

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        try:
            call = decode_call(name, arguments, redact_secrets=self.redact_secrets)
        except ToolInputError as error:
            if error.field == "name":  # an unknown tool is a protocol error, not a tool result
                raise MCPError(types.INVALID_PARAMS, str(error)) from None
            return _error(str(error))
        cancel = threading.Event()
        try:
            # abandon_on_cancel: a cancelled call (notifications/cancelled, the client gone) returns at
            # once, and the flag stops the worker thread between two fields (agent_tools.ToolCancelled)
            output = await anyio.to_thread.run_sync(self.run, call, cancel, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            cancel.set()
            raise
        except ToolInputError as error:
            return _error(str(error))
        except StoreError as error:
            return _error(f"pimem: {error} (run `pimem sync` to import the agents' transcripts)")
        except Exception as error:  # the server outlives any one call; the text may hold stored data
            log.warning("%s failed: %s", name, type(error).__name__)
            return _error(f"pimem: {name} failed ({type(error).__name__}); the server keeps running")
        return types.CallToolResult(content=[types.TextContent(type="text", text=output.markdown)],
                                    structured_content=output.structured)


def create_server(db_path: Path, *, redact_secrets: bool = True) -> Server[Any]:
    dense.enable()   # a long-lived process: keep the index lists of multi-entity queries (pimem.recall.dense)
    runner = ToolRunner(db_path, redact_secrets=redact_secrets)

    async def on_list_tools(_ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None,
                            ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tool_list())

    async def on_call_tool(_ctx: ServerRequestContext[Any], params: types.CallToolRequestParams,
                           ) -> types.CallToolResult:
        return await runner.call_tool(params.name, params.arguments)

    return Server("pimem", version=__version__, title="pimem: memory of past coding-agent conversations",
                  instructions=INSTRUCTIONS, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(db_path: Path, *, redact_secrets: bool = True) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    anyio.run(_serve_stdio, create_server(db_path, redact_secrets=redact_secrets))
