"""The tools pimem offers to agents: ``recall_memory``, ``read_session`` and ``line_history``.

One definition for every agent surface (the MCP server ``pimem mcp`` today; the editor's
language-model tool calls ``recall_memory`` through the language server): each tool's name,
description (the model reads it to decide when to call), JSON schemas, argument validation and
result. docs/mcp.md documents them; a test checks it against :data:`TOOLS`.

Every limit of a schema is checked here too, because clients drop parts of it before a model sees
it (Codex strips ``maxItems``, ``minimum`` and ``maximum``). A bad argument raises
:class:`ToolInputError` naming the field. Results are Markdown (for clients that show text) plus
structured content (what Claude Code and Codex send to the model when it is present; its views are
:func:`pimem.wire.agent_row` and :func:`pimem.wire.session_view`); both are redacted
(:mod:`pimem.redact`) unless the user turned that off: each stored field is bounded, redacted, and only
then cut to the answer's limits, and a cancelled call (``cancel`` set) stops between two fields.

Plain Python: no MCP SDK, no pygls (tests/test_layers.py).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from pimem import lineblame, wire
from pimem.models import SOURCES
from pimem.recall import MAX_ENTITIES, RecallError, RecallQuery, make_query, recall
from pimem.recall.freetext import Candidate, parse_text, recall_conversations
from pimem.recall.query import MAX_PATH_CHARS, TOOL_NAMES_CUT
from pimem.recall.rows import RecallRow
from pimem.redact import bounded, redact
from pimem.sessions import MAX_CONTEXT, SessionError, SessionWindow, read_window
from pimem.textutil import quoted

RECALL_MEMORY = "recall_memory"
MAX_QUERY_CHARS = 2_000     # recall_memory's query: a question, not a document
READ_SESSION = "read_session"
LINE_HISTORY = "line_history"
MAX_TOOL_LINES = 2_000      # line_history's range: what a model can use in one answer
MAX_RESULTS = 20            # recall_memory's limit (the CLI and the editor allow more)
DEFAULT_RESULTS = 5
DEFAULT_CONTEXT = 2
_MARKDOWN_FIELD_CHARS = 2000  # per text field in the Markdown (Pi sends only this to the model; it cuts
                              # results over 20 KB); structured content carries the text whole

RECALL_DESCRIPTION = """\
Search this user's past conversations with their coding agents (Pi, Claude Code and Codex CLI, \
across all projects) for the turns about specific things: what the user asked, what the agent \
answered, which tools it used, when and in which folder.

Invocation policy:
1. Call this tool immediately when the user explicitly asks to review, remember, summarize, continue, \
or compare a previous discussion about a topic. Examples:
   - "我之前关于 xxx 的实践" / "I previously worked on xxx"
   - "上次我们讨论过..." / "last time we discussed..." / "last time we…"
   - "你还记得那个 xxx 项目吗" / "remember that xxx project?"
   - "之前那个方案怎么说的" / "what was that plan we had?"
   - "我们之前不是修过这个吗？" / "didn't we fix this before?" / "didn't we fix…"
   - "how did we solve xxx last time?" / "where did we leave off with xxx?"
2. When you cannot confidently answer from the current conversation and your general knowledge, but \
the user may have discussed the topic in prior sessions, first ask whether they want you to search \
their conversation history. Call this tool only after they agree.
3. Do not search history merely because a question is difficult when the user's prior discussions \
are not relevant.

Extract 2–5 specific entities from the user's topic: project names, tool names, technologies, domain \
terms, or identifiers (e.g. ["payroll", "LangGraph", "A2A"]). Each entity is matched literally and \
case-insensitively; a turn scores 2 per entity in what the user typed and 1 per entity in the reply, \
best first, then newest. Or, instead of entities, pass the user's question as `query`: past \
conversations are then ranked by its words, one result (its best turn) per conversation. Each \
result has a turnId and a sessionId: call read_session with them to read the turns around it. \
Secrets in the results are masked as [REDACTED:<kind>]."""

READ_SESSION_DESCRIPTION = """\
Read the turns of one past session, in order, around one turn: the `before` turns before `turnId`, \
that turn, and the `after` turns after it (without `turnId`: the session's first turns). Use it \
after recall_memory to see what led to a recalled answer and what came after it; sessionId and \
turnId come from recall_memory's results. Secrets are masked as [REDACTED:<kind>]."""

LINE_HISTORY_DESCRIPTION = """\
Which past conversation with a coding agent (Pi, Claude Code, Codex…) wrote the lines of a file as \
they are now: for each attributed line, the conversation (sessionId, turnId: read it with \
read_session), the user's request in that turn, when, the edit tool, and a confidence (exact: a block \
of lines that edit wrote, line: that line alone, moved: written by that edit in another order). Lines \
the person wrote or changed since are not listed. Use it to learn why code is the way it is before \
changing it. Secrets are masked as [REDACTED:<kind>]."""

_ROW_PROPERTIES: dict[str, Any] = {
    "turnId": {"type": "string"},
    "sessionId": {"type": "string"},
    "source": {"type": "string", "enum": list(SOURCES)},
    "cwd": {"type": "string"},
    "ts": {"type": "integer", "description": "time of the user's message, Unix milliseconds"},
    "userText": {"type": "string"},
    "replyText": {"type": "string"},
    "toolNames": {"type": "array", "items": {"type": "string"}},
    "jsonlPath": {"type": "string"},
    "line": {"type": ["integer", "null"], "description": "1-based line of the user's message in jsonlPath"},
}
_RECALL_ROW_SCHEMA = {
    "type": "object",
    "properties": {**_ROW_PROPERTIES, "hits": {"type": "integer", "description": "the score"}},
    "required": [*_ROW_PROPERTIES, "hits"],
}
_SESSION_TURN_SCHEMA = {"type": "object", "properties": _ROW_PROPERTIES, "required": list(_ROW_PROPERTIES)}

RECALL_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": MAX_ENTITIES,
            "description": "2-5 specific terms from the user's topic (at most 8), "
                           'e.g. ["payroll", "LangGraph", "A2A"]; give either entities or query',
        },
        "query": {
            "type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS,
            "description": "instead of entities: the user's question in their own words; past conversations "
                           "are ranked by its words and each one's best turn is returned",
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": DEFAULT_RESULTS,
                  "description": f"how many past turns to return, 1 to {MAX_RESULTS} (default {DEFAULT_RESULTS})"},
        "sources": {"type": "array", "items": {"type": "string", "enum": list(SOURCES)},
                    "description": "only these agents' sessions (default: all)"},
        "cwd": {"type": "string",
                "description": "only sessions run in this folder or below it (an absolute path; default: all)"},
    },
    "required": [],
    "additionalProperties": False,
}
RECALL_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"results": {"type": "array", "items": _RECALL_ROW_SCHEMA}},
    "required": ["results"],
}
READ_SESSION_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sessionId": {"type": "string", "minLength": 1, "description": "a sessionId from recall_memory's results"},
        "turnId": {"type": "string", "minLength": 1,
                   "description": "a turnId of that session (default: start at the session's first turn)"},
        "before": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "default": DEFAULT_CONTEXT,
                   "description": f"turns before turnId, 0 to {MAX_CONTEXT} (default {DEFAULT_CONTEXT})"},
        "after": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "default": DEFAULT_CONTEXT,
                  "description": f"turns after turnId, 0 to {MAX_CONTEXT} (default {DEFAULT_CONTEXT})"},
    },
    "required": ["sessionId"],
    "additionalProperties": False,
}
READ_SESSION_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sessionId": {"type": "string"},
        "source": {"type": "string", "enum": list(SOURCES)},
        "cwd": {"type": "string"},
        "jsonlPath": {"type": "string"},
        "turnCount": {"type": "integer", "description": "turns in the session"},
        "firstPosition": {"type": "integer", "description": "0-based position of turns[0] in the session"},
        "turns": {"type": "array", "items": _SESSION_TURN_SCHEMA},
    },
    "required": ["sessionId", "source", "cwd", "jsonlPath", "turnCount", "firstPosition", "turns"],
}


LINE_HISTORY_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "the file, an absolute path"},
        "startLine": {"type": "integer", "minimum": 1, "description": "first line, 1-based (default 1)"},
        "endLine": {"type": "integer", "minimum": 1,
                    "description": f"last line, 1-based, inclusive (default: startLine + {MAX_TOOL_LINES - 1}; "
                                   f"at most {MAX_TOOL_LINES} lines at once)"},
    },
    "required": ["path"],
    "additionalProperties": False,
}
_RUN_PROPERTIES: dict[str, Any] = {
    "startLine": {"type": "integer", "description": "first line of the run, 1-based"},
    "endLine": {"type": "integer", "description": "last line of the run, 1-based, inclusive"},
    "confidence": {"type": "string", "enum": ["exact", "line", "moved"]},
    "sessionId": {"type": "string"},
    "turnId": {"type": "string"},
    "source": {"type": "string", "enum": list(SOURCES)},
    "timestamp": {"type": "string", "description": "the turn's time, ISO 8601 UTC"},
    "prompt": {"type": "string", "description": "the user's request in that turn (first line)"},
    "tool": {"type": "string"},
    "toolCallId": {"type": ["string", "null"]},
}
LINE_HISTORY_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "gitUsed": {"type": "boolean", "description": "git blame confirmed the time windows"},
        "attributedLines": {"type": "integer", "description": "lines of the range written by past conversations"},
        "runs": {"type": "array", "items": {"type": "object", "properties": _RUN_PROPERTIES,
                                            "required": list(_RUN_PROPERTIES)}},
    },
    "required": ["path", "gitUsed", "attributedLines", "runs"],
}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(RECALL_MEMORY, "Recall past conversations", RECALL_DESCRIPTION, RECALL_INPUT_SCHEMA,
             RECALL_OUTPUT_SCHEMA),
    ToolSpec(READ_SESSION, "Read a past session", READ_SESSION_DESCRIPTION, READ_SESSION_INPUT_SCHEMA,
             READ_SESSION_OUTPUT_SCHEMA),
    ToolSpec(LINE_HISTORY, "Which conversation wrote these lines", LINE_HISTORY_DESCRIPTION,
             LINE_HISTORY_INPUT_SCHEMA, LINE_HISTORY_OUTPUT_SCHEMA),
)


class ToolInputError(ValueError):
    """A bad tool argument (or an unknown tool); the message names the field and says what is expected."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f'invalid "{field}": {message}')
        self.field = field


@dataclass(frozen=True)
class ToolOutput:
    markdown: str                   # readable text (MCP content[0])
    structured: dict[str, Any]      # MCP structuredContent, matching the tool's output schema


class ToolCancelled(Exception):
    """The caller went away (the MCP client cancelled the call): the work stopped between two fields."""


class ToolCall(Protocol):
    def run(self, conn: sqlite3.Connection, cancel: threading.Event | None = None) -> ToolOutput: ...


def decode_call(name: str, arguments: object, *, redact_secrets: bool = True) -> ToolCall:
    """Validate a call's arguments (before any store is opened). Raises :class:`ToolInputError`."""
    if name == RECALL_MEMORY:
        query, found = recall_query(arguments)
        return RecallCall(query, redact_secrets, found)
    if name == READ_SESSION:
        return _read_session_call(arguments, redact_secrets)
    if name == LINE_HISTORY:
        return _line_history_call(arguments, redact_secrets)
    known = ", ".join(tool.name for tool in TOOLS)
    raise ToolInputError("name", f"unknown tool {quoted(name)} (pimem's tools: {known})")


def _arguments(arguments: object, spec: dict[str, Any]) -> dict[str, Any]:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolInputError("arguments", "the arguments must be an object")
    allowed = spec["properties"]
    for key in arguments:
        if key not in allowed:
            raise ToolInputError(str(key)[:40], f"unknown argument (expected {', '.join(allowed)})")
    for key in spec["required"]:
        if arguments.get(key) is None:
            raise ToolInputError(key, "this argument is required")
    return arguments


def _bounded_int(arguments: dict[str, Any], field: str, default: int, low: int, high: int) -> int:
    value = arguments.get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolInputError(field, f"must be an integer from {low} to {high}, got {_shown(value)}")
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def recall_query(arguments: object) -> tuple[RecallQuery, list[Candidate] | None]:
    """``recall_memory``'s arguments as a recall query (the same semantics as ``pimem recall``), and
    the free-text candidates of its ``query`` when it was asked in words (``pimem recall --text``)."""
    args = _arguments(arguments, RECALL_INPUT_SCHEMA)
    entities, text = args.get("entities"), args.get("query")
    if entities is not None and text is not None:
        raise ToolInputError("query", "give either entities or query, not both")
    if entities is None and text is None:
        raise ToolInputError("entities", "this argument is required (or, instead, query)")
    try:
        found: list[Candidate] | None = None
        if text is not None:
            if not isinstance(text, str) or len(text) > MAX_QUERY_CHARS:
                raise RecallError("query", f"query must be a string of at most {MAX_QUERY_CHARS} characters")
            try:
                found = parse_text(text)
            except RecallError as error:
                raise RecallError("query", str(error).replace("text ", "query ", 1)) from None
            entities = [candidate.term for candidate in found[:MAX_ENTITIES]]
        make_query(entities)  # the entities first, as the CLI reports them
        limit = _bounded_int(args, "limit", DEFAULT_RESULTS, 1, MAX_RESULTS)
        return make_query(entities, limit, args.get("sources"), args.get("cwd")), found
    except RecallError as error:
        raise ToolInputError(error.field, str(error)) from None


def _read_session_call(arguments: object, redact_secrets: bool) -> ReadSessionCall:
    args = _arguments(arguments, READ_SESSION_INPUT_SCHEMA)
    for field in ("sessionId", "turnId"):
        value = args.get(field)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ToolInputError(field, "must be a non-empty string")
    before = _bounded_int(args, "before", DEFAULT_CONTEXT, 0, MAX_CONTEXT)
    after = _bounded_int(args, "after", DEFAULT_CONTEXT, 0, MAX_CONTEXT)
    return ReadSessionCall(args["sessionId"], args.get("turnId"), before, after, redact_secrets)


def _line_history_call(arguments: object, redact_secrets: bool) -> LineHistoryCall:
    args = _arguments(arguments, LINE_HISTORY_INPUT_SCHEMA)
    path = args["path"]
    if not isinstance(path, str) or not path.strip() or len(path) > MAX_PATH_CHARS or "\0" in path \
            or not os.path.isabs(path):
        raise ToolInputError("path", f"must be an absolute path of at most {MAX_PATH_CHARS} characters")
    start = _bounded_int(args, "startLine", 1, 1, 2**31 - 1)
    end = _bounded_int(args, "endLine", start + MAX_TOOL_LINES - 1, 1, 2**31 - 1)
    if end < start:
        raise ToolInputError("endLine", f"must not be before startLine ({start}), got {end}")
    if end - start + 1 > MAX_TOOL_LINES:
        raise ToolInputError("endLine", f"at most {MAX_TOOL_LINES} lines at once (startLine {start}, endLine {end})")
    return LineHistoryCall(path, start - 1, end, redact_secrets)


@dataclass(frozen=True)
class LineHistoryCall:
    path: str
    start: int          # 0-based
    end: int            # exclusive
    redact_secrets: bool

    def run(self, conn: sqlite3.Connection, cancel: threading.Event | None = None) -> ToolOutput:
        try:
            text = lineblame.read_text(self.path)
        except (OSError, lineblame.TextTooLarge) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise ToolInputError("path", f"the file cannot be read ({reason})") from None
        history = lineblame.line_history(conn, self.path, text, self.start, self.end)
        if self.redact_secrets:
            history = replace(history, lines=[
                replace(found, session_id=_redacted_text(found.session_id, cancel),
                        turn_id=_redacted_text(found.turn_id, cancel), prompt=_redacted_text(found.prompt, cancel),
                        tool=_redacted_text(found.tool, cancel),
                        tool_call_id=None if found.tool_call_id is None
                        else _redacted_text(found.tool_call_id, cancel)) for found in history.lines])
        structured = wire.line_runs(history)
        return ToolOutput(line_history_markdown(structured), structured)


@dataclass(frozen=True)
class RecallCall:
    query: RecallQuery
    redact_secrets: bool
    text: list[Candidate] | None = None   # asked in words: conversations ranked (pimem.recall.freetext)

    def run(self, conn: sqlite3.Connection, cancel: threading.Event | None = None) -> ToolOutput:
        if self.text is not None:
            found = recall_conversations(conn, self.text, self.query).rows
        else:
            found = recall(conn, self.query)
        if self.redact_secrets:
            found = [_redacted_row(row, cancel) for row in found]
        rows = [wire.agent_row(row) for row in found]
        return ToolOutput(recall_markdown(rows), {"results": rows})


@dataclass(frozen=True)
class ReadSessionCall:
    session_id: str
    turn_id: str | None
    before: int
    after: int
    redact_secrets: bool

    def run(self, conn: sqlite3.Connection, cancel: threading.Event | None = None) -> ToolOutput:
        try:
            window = read_window(conn, self.session_id, self.turn_id, self.before, self.after)
        except SessionError as error:
            raise ToolInputError(error.field, str(error)) from None
        if self.redact_secrets:
            window = _redacted_window(window, cancel)
        structured = wire.session_view(window)
        return ToolOutput(session_markdown(structured), structured)


# Redaction comes before every cut (the wire views cut to the answer's limits), so that no half of a
# secret survives a cut; a huge stored value is first bounded (redact.bounded, 1 MB) so that its cost
# is bounded too. A cancelled call stops between two fields.

def _redacted_text(text: str, cancel: threading.Event | None) -> str:
    if cancel is not None and cancel.is_set():
        raise ToolCancelled
    return redact(bounded(text))


def _redacted_row(row: RecallRow, cancel: threading.Event | None) -> RecallRow:
    return replace(row, turn_id=_redacted_text(row.turn_id, cancel),
                   session_id=_redacted_text(row.session_id, cancel), cwd=_redacted_text(row.cwd, cancel),
                   user_text=_redacted_text(row.user_text, cancel), reply_text=_redacted_text(row.reply_text, cancel),
                   # one name more than an answer holds: the row is still marked as cut
                   tool_names=[_redacted_text(name, cancel) for name in row.tool_names[:TOOL_NAMES_CUT + 1]],
                   jsonl_path=_redacted_text(row.jsonl_path, cancel))


def _redacted_window(window: SessionWindow, cancel: threading.Event | None) -> SessionWindow:
    return replace(window, session_id=_redacted_text(window.session_id, cancel),
                   cwd=_redacted_text(window.cwd, cancel), jsonl_path=_redacted_text(window.jsonl_path, cancel),
                   turns=[_redacted_row(row, cancel) for row in window.turns])


# ---------------------------------------------------------------------------------------------
# Markdown (content[0]): for a model or a person reading the tool result. Not rendered as Markdown
# by the agents, so transcript text is quoted as it is, except control characters (a terminal
# shows tool results: no escape sequence from a transcript may reach it).
# ---------------------------------------------------------------------------------------------

def visible(text: str) -> str:
    """Control characters other than newline and tab written out as ``\\xNN`` / ``\\u00NN``."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char in "\n\t" or ord(char) > 0x9f
                   else char.encode("unicode_escape").decode("ascii") for char in text)


def _cut(text: str, limit: int = _MARKDOWN_FIELD_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def _when(ts: Any) -> str:
    try:
        return datetime.fromtimestamp(int(ts) / 1000).strftime("%Y-%m-%d %H:%M")
    except (TypeError, OverflowError, OSError, ValueError):
        return "unknown time"


def _turn_lines(turn: dict[str, Any]) -> list[str]:
    lines = [f"turnId: {visible(str(turn['turnId']))}", "", f"**User:** {visible(_cut(str(turn['userText'])))}"]
    if turn["replyText"]:
        lines += ["", f"**Assistant:** {visible(_cut(str(turn['replyText'])))}"]
    if turn["toolNames"]:
        lines += ["", f"Tools: {visible(', '.join(str(name) for name in turn['toolNames']))}"]
    where = f"{turn['jsonlPath']}:{turn['line']}" if turn.get("line") else str(turn["jsonlPath"])
    lines += ["", f"Transcript: {visible(where)}", ""]
    return lines


def recall_markdown(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return "No past conversation matched these entities."
    lines = [f"## {len(rows)} past turn{'s' if len(rows) != 1 else ''}, best first", ""]
    for number, row in enumerate(rows, 1):
        lines.append(f"### {number}. {row['source']} · {_when(row['ts'])} · {visible(str(row['cwd']) or '?')} "
                     f"· score {row['hits']}")
        lines.append(f"sessionId: {visible(str(row['sessionId']))}")
        lines += _turn_lines(row)
    return "\n".join(lines).rstrip() + "\n"


def line_history_markdown(view: dict[str, Any]) -> str:
    """Each run with its conversation (not the file's text: the agent reads the file itself)."""
    header = f"## {visible(str(view['path']))}"
    if not view["runs"]:
        return header + "\n\nNo line in this range was written by a past conversation's edit.\n"
    count = view["attributedLines"]
    out = [header, "", f"{count} line{'s' if count != 1 else ''} written by past conversations"
           + (" (git blame checked)" if view["gitUsed"] else "") + ":", ""]
    for run in view["runs"]:
        where = (f"line {run['startLine']}" if run["startLine"] == run["endLine"]
                 else f"lines {run['startLine']}-{run['endLine']}")
        out.append(f"### {where} · {run['source']} · {run['timestamp'][:16].replace('T', ' ')} UTC · "
                   f"{run['confidence']}")
        out.append(f"Request: {visible(_cut(str(run['prompt'])))}")
        out.append(f"sessionId: {visible(str(run['sessionId']))}")
        out += [f"turnId: {visible(str(run['turnId']))} (tool {visible(str(run['tool']))})", ""]
    return "\n".join(out).rstrip() + "\n"


def session_markdown(view: dict[str, Any]) -> str:
    turns = view["turns"]
    first = int(view["firstPosition"])
    header = (f"## Session {visible(str(view['sessionId']))} ({view['source']} · {visible(str(view['cwd']) or '?')} · "
              f"{view['turnCount']} turns)")
    if not turns:
        return header + "\n\nThe session has no turns.\n"
    lines = [header, "", f"Turns {first + 1} to {first + len(turns)} of {view['turnCount']}.", ""]
    for offset, turn in enumerate(turns):
        lines.append(f"### Turn {first + offset + 1} · {_when(turn['ts'])}")
        lines += _turn_lines(turn)
    return "\n".join(lines).rstrip() + "\n"
