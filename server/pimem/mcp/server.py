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

A line the SDK cannot decode (a lone-surrogate escape, nesting deeper than its parser's limit, not
JSON at all) reaches the server as an exception, which the SDK drops: the client would wait for ever.
:class:`AnsweringReadStream` answers it as JSON-RPC says: a request (its id found with Python's
parser, or by a linear scan of the top-level members when even that nests too deep) gets an error
with its id, a line that is not JSON a Parse error with id null; notifications and responses get
nothing. No answer quotes the line.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp.types as types
import pydantic
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from pimem import __version__
from pimem.agent_tools import TOOLS, ToolCall, ToolInputError, ToolOutput, decode_call
from pimem.recall import dense, docmap
from pimem.store import StoreError, connect

if TYPE_CHECKING:    # the SDK's stream protocols (a private module: for the types only)
    from mcp.shared._stream_protocols import ReadStream, WriteStream

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
    docmap.enable()  # and the word index's docs, for free-text ranking (pimem.recall.docmap)
    runner = ToolRunner(db_path, redact_secrets=redact_secrets)

    async def on_list_tools(_ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None,
                            ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tool_list())

    async def on_call_tool(_ctx: ServerRequestContext[Any], params: types.CallToolRequestParams,
                           ) -> types.CallToolResult:
        return await runner.call_tool(params.name, params.arguments)

    return Server("pimem", version=__version__, title="pimem: memory of past coding-agent conversations",
                  instructions=INSTRUCTIONS, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


# The JSON tokens that matter for finding the top-level members: strings (unrolled: linear), brackets,
# colons and commas.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]')
_SCALAR = re.compile(r'\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"[^"\\]*(?:\\.[^"\\]*)*"|null|true|false)')
_NO_ID = object()


def _top_level(line: str) -> dict[str, Any] | None:
    """The top-level members of a JSON object too deep for a recursive parser: scalars as they are,
    other values as None. None when ``line`` is not an object. One pass, no recursion."""
    members: dict[str, Any] = {}
    depth, key, after_colon = 0, None, False
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token in "{[":
            if depth == 1 and after_colon and key is not None:
                members[key], key, after_colon = None, None, False
            depth += 1
        elif token in "}]":
            depth -= 1
        elif depth != 1:
            continue
        elif token == ":":
            after_colon = True
            if key is not None and (scalar := _SCALAR.match(line, match.end())) is not None:
                try:
                    members[key] = json.loads(scalar.group(1))
                except ValueError:
                    members[key] = None
                key, after_colon = None, False
        elif token == ",":
            key, after_colon = None, False
        elif token.startswith('"') and not after_colon:
            try:
                key = json.loads(token)
            except ValueError:
                key = None
        if depth == 0 and match.start() > 0:
            break
    return members if line.lstrip().startswith("{") else None


def _undecoded(error: Exception) -> tuple[dict[str, Any] | None, int, str]:
    """The message the SDK could not decode (its top-level members; None when it is not a JSON
    object), the JSON-RPC error code and a short reason that quotes nothing of it."""
    if not isinstance(error, pydantic.ValidationError) or not error.errors():
        return None, types.PARSE_ERROR, "the message could not be decoded"
    first = error.errors()[0]
    raw = first.get("input")
    if isinstance(raw, dict):      # JSON, but not a JSON-RPC message the SDK knows
        return raw, types.INVALID_REQUEST, "not a valid JSON-RPC message"
    if not isinstance(raw, str | bytes):
        return None, types.INVALID_REQUEST, "not a valid JSON-RPC message"
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    reason = str(first.get("msg", "invalid JSON"))[:100]    # jiter's reason and position, no input
    try:
        parsed = json.loads(text)
    except RecursionError:
        return _top_level(text), types.PARSE_ERROR, reason
    except ValueError:
        return None, types.PARSE_ERROR, reason
    return (parsed if isinstance(parsed, dict) else None), types.PARSE_ERROR, reason


def _answer_to(error: Exception) -> types.JSONRPCError | None:
    """The error answer owed for a line the SDK could not decode; None for a notification or a
    response (JSON-RPC answers neither)."""
    message, code, reason = _undecoded(error)
    if message is None:
        # Not an object: JSON-RPC's Parse error (not JSON) or Invalid Request (other JSON), id null.
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=reason))
    request_id = message.get("id", _NO_ID)
    if request_id is _NO_ID or "result" in message or "error" in message:
        return None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=reason))


class AnsweringReadStream:
    """The stdio transport's read stream, with every request it could not decode answered (an error
    on ``answers``) instead of handed to the SDK, which would drop it unanswered."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], answers: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._answers = answers

    @property
    def last_context(self) -> object:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            answer = _answer_to(item)
            log.warning("a message that could not be decoded was %s", "answered" if answer else "ignored")
            if answer is not None:
                await self._answers.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        await self.aclose()
        return None


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(AnsweringReadStream(read_stream, write_stream), write_stream,
                         server.create_initialization_options())


def serve(db_path: Path, *, redact_secrets: bool = True) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    anyio.run(_serve_stdio, create_server(db_path, redact_secrets=redact_secrets))
