"""OpenAI Codex CLI rollouts: ``$CODEX_HOME/{sessions/YYYY/MM/DD, archived_sessions}/rollout-….jsonl``.

Four generations are read, detected per file (docs/formats.md section 2):

* G0, the 2025 TypeScript CLI: ``rollout-YYYY-MM-DD-<uuid>.json``, one JSON object
  ``{"session": {...}, "items": [ResponseItem…]}``, read whole (at most 64 MiB) and handled by
  :meth:`CodexParser.feed_document`;
* G1: bare JSONL, first line ``{"id", "timestamp", "instructions"}`` without ``type``, then bare
  ResponseItems and ``{"record_type": "state"}`` lines; no ids, no per-line timestamps;
* G2: envelopes ``{"timestamp", "type", "payload"}``; G3 adds ``ordinal``, item ids and
  ``content_item_kinds``; files may be ``.jsonl.zst``.

Turns come from ``response_item`` messages only: ``event_msg`` duplicates them and ``compacted``
replays earlier history. Injected user-role context (AGENTS.md, environment, IDE preamble…) is removed;
``event_msg/task_started`` closes the current turn, so text produced by a task without a user message
(a compaction summary) is attached to no turn. A user message of images only (a pasted screenshot sent
without a word) is no prompt, as in Claude Code and Pi: the reply to it continues the turn the
``task_started`` before it closed. Sub-agent threads are skipped as a whole.

Minimal rollouts that converters and other tools write (deja-vu's day-zero benchmark, docs/formats.md
2.10) are read too: envelopes without ``session_meta`` take the session id from the file name
(:func:`id_from_file_name`; cwd unknown), the message's ``role`` decides whose text an ``input_text``
item is, and assistant text before the first user message and before any ``task_started`` (a
conversation that opens with the assistant) is a turn of its own with an empty user text, so it stays
findable without being mixed into the first prompt or put before it in that prompt's reply.

Files a turn touched come from its tool calls: the headers of an ``apply_patch`` patch (``*** Add
File:`` write, ``*** Update File:`` edit, ``*** Delete File:`` delete, ``*** Move to:`` write of the new
path and delete of the old), wherever the patch is: a ``custom_tool_call``'s ``input`` (G3's freeform
tool), a string of a ``function_call``'s JSON ``arguments`` (G0's ``shell`` ``["apply_patch", …]``,
``exec_command`` heredocs) or a ``local_shell_call``'s command, or a JavaScript string of a code-mode
``exec`` (escaped newlines); and the ``path``/``file_path`` argument of the file tools in
:data:`PATH_TOOLS`. Patch paths are relative to the session's cwd. The text a patch wrote
(:func:`patch_edits`, the line memory of pimem.lineblame): per hunk of an updated file the ``+`` lines
written and the ``-`` lines replaced (context lines in both), an added file's ``+`` lines (the whole
file, replacing nothing: a new file), the hunks of a moved file under its new path; the call's ``call_id``.

Transcripts are the files named ``rollout-*`` (:data:`FILES`); a ``.jsonl.zst`` is skipped when the
plain ``.jsonl`` is beside it. The Codex → Pi migration reads a rollout's messages through
:class:`CodexMessageLog`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pimem.importers.base import (
    Chunk,
    EditCall,
    FileAction,
    FileTouch,
    NotThisFormat,
    SessionInfo,
    TranscriptFiles,
    TranscriptParser,
    saved,
    version_hint,
)
from pimem.jsonl import Line
from pimem.textutil import as_dict, as_list, clean_text, is_storable, iso_to_ms, nonempty_str


class CodexFiles(TranscriptFiles):
    """``rollout-*.jsonl``, ``rollout-*.jsonl.zst`` (compressed; the plain file wins when both exist) and
    G0's ``rollout-*.json`` documents."""

    document_max_bytes = 64 * 1024 * 1024
    document_name = "a .json rollout"

    def wants(self, name: str) -> bool:
        return name.startswith("rollout-") and (name.endswith(".jsonl") or name.endswith(".json")
                                                or name.endswith(".jsonl.zst"))

    def plain_twin(self, name: str) -> str | None:
        return name[: -len(".zst")] if name.endswith(".jsonl.zst") else None

    def is_document(self, path: str) -> bool:
        return path.endswith(".json")


FILES = CodexFiles()

# What the parser reads from a rollout changed: files parsed with an older version are parsed again
# once (pimem.sync). 2: file touches. 3: minimal rollouts (no session_meta, input_text replies, an
# opening assistant message). 4: edit spans (the text apply_patch wrote, pimem.editspans). 5: an added
# file replaced nothing (its lines are all the patch's). 6: the reply to a prompt of images only continues
# the turn before (was lost).
# 7: the line diff of an edit keeps indentation (a line it reindented is its own) and compares the
# lines next to the change (pimem.editspans).
# 8: the lines an edit kept next to the lines it added are stored with its spans (pimem.editspans
# ``context_of``, store layout 9).
RULES_VERSION = 8

# Codex file tools with a path argument (besides apply_patch), and what they do to the file.
PATH_TOOLS: dict[str, FileAction] = {"read_file": "read", "view_image": "read"}
_PATCH_START = "*** Begin Patch"
_PATCH_HEADER = re.compile(r"^\*\*\* (Add File|Update File|Delete File|Move to): *(.+?)[ \t\r]*$", re.MULTILINE)
_PATCH_ACTIONS: dict[str, FileAction] = {"Add File": "write", "Update File": "edit", "Delete File": "delete",
                                         "Move to": "write"}

INJECTED_PREFIXES = (
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<environment_context>",
    "<permissions instructions>",
    "<image name=",
    "</image>",
    "<user_shell_command>",
    "<recommended_plugins>",
    "<apps_instructions>",
    "<skills_instructions>",
    "<plugins_instructions>",
    "<collaboration_mode>",
    "<multi_agent_mode>",
    "<realtime_conversation>",
    "<context_window>",
    "<turn_aborted>",
)
IDE_REQUEST_MARKER = "## My request for Codex:"

_TOOL_ITEM_NAMES = {"local_shell_call": "local_shell", "web_search_call": "web_search"}

# Envelope types that can never matter; rejected on the raw bytes (they are most of a rollout).
_SKIP_TYPES = re.compile(
    rb'^\{[^{]{0,200}?"type"\s*:\s*"(?:world_state|token_usage_record|compacted|turn_context_delta)"')
_SKIP_EVENT = re.compile(rb'^\{[^{]{0,200}?"type"\s*:\s*"event_msg"')
_SKIP_PAYLOAD = re.compile(
    rb'"payload"\s*:\s*\{\s*"type"\s*:\s*"(?:reasoning|function_call_output|custom_tool_call_output|ghost_snapshot|compaction|additional_tools|tool_search_output)"'
)


def user_text(payload: dict[str, Any]) -> str:
    """What the person typed in a user message, without injected context."""
    content = as_list(payload.get("content"))
    metadata = as_dict(payload.get("internal_chat_message_metadata_passthrough")) or {}
    kinds = metadata.get("content_item_kinds")
    texts: list[str] = []
    for index, item in enumerate(content):
        item = as_dict(item)
        if item is None or item.get("type") != "input_text" or not isinstance(item.get("text"), str):
            continue
        text: str = item["text"]
        if isinstance(kinds, list) and len(kinds) == len(content) and kinds[index] != "user.text":
            continue
        # Also for items labelled user.text: Codex 0.171 labels the <image> wrapper of a pasted
        # image as user.text.
        if text.lstrip().startswith(INJECTED_PREFIXES):
            continue
        if IDE_REQUEST_MARKER in text:
            text = text.split(IDE_REQUEST_MARKER, 1)[1]
        texts.append(text)
    return "\n".join(texts).strip()


def has_image(payload: dict[str, Any]) -> bool:
    """Whether a message carries an image (an ``input_image`` item: a pasted or ``-i`` image)."""
    return any((as_dict(item) or {}).get("type") == "input_image" for item in as_list(payload.get("content")))


def assistant_text(payload: dict[str, Any]) -> str:
    """The text of an assistant message: ``output_text`` items, or ``input_text`` ones as minimal rollouts
    write both roles (the message's role decides)."""
    texts = []
    for item in as_list(payload.get("content")):
        item = as_dict(item)
        if (item is not None and item.get("type") in ("output_text", "input_text")
                and isinstance(item.get("text"), str)):
            texts.append(item["text"])
    return "\n".join(texts).strip()


_FILE_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def id_from_file_name(path: str) -> str | None:
    """The session id a rollout's name gives: the UUID that ends ``rollout-<time>-<uuid>.jsonl``, else
    whatever follows ``rollout-`` (day0bench writes ``rollout-<id>.jsonl``); None when nothing does."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".jsonl.zst", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    name = name.removeprefix("rollout-")
    match = _FILE_UUID.search(name)
    if match is not None:
        return match.group(0).lower()
    return nonempty_str(clean_text(name))


def tool_name(payload: dict[str, Any]) -> str | None:
    kind = payload.get("type")
    if kind in ("function_call", "custom_tool_call"):
        return nonempty_str(payload.get("name"))
    if isinstance(kind, str) and kind in _TOOL_ITEM_NAMES:
        return _TOOL_ITEM_NAMES[kind]
    return None


def patch_touches(text: str) -> list[FileTouch]:
    """The files an ``apply_patch`` patch in ``text`` touches, in order (none without a patch)."""
    if _PATCH_START not in text:
        return []
    if text.split(_PATCH_START, 1)[1].startswith("\\n"):
        text = text.replace("\\n", "\n")   # a patch inside a JavaScript string literal (code mode)
    touches: list[FileTouch] = []
    for match in _PATCH_HEADER.finditer(text):
        header, path = match.group(1), match.group(2)
        if header == "Move to" and touches and touches[-1][1] == "edit":
            touches[-1] = (touches[-1][0], "delete")   # the updated file moved away: gone from its path
        touches.append((path, _PATCH_ACTIONS[header]))
    return touches


def patch_edits(text: str, tool: str, call_id: str | None) -> list[EditCall]:
    """The text an ``apply_patch`` patch in ``text`` wrote: per hunk of an updated file (the ``+`` lines
    written, the ``-`` lines replaced, the context lines in both), and the ``+`` lines of an added file
    (the whole file). Hunks of a moved file go to its new path."""
    if _PATCH_START not in text:
        return []
    body = text.split(_PATCH_START, 1)[1]
    if body.startswith("\\n"):
        body = body.replace("\\n", "\n")
    body = body.split("*** End Patch", 1)[0]
    edits: list[EditCall] = []
    path: str | None = None
    whole = False
    old: list[str] = []
    new: list[str] = []

    def flush() -> None:
        if path is not None and (new or old or whole):
            # an added file is new: the patch replaced nothing ("", not None: not a write over unknown content)
            edits.append(EditCall(path, tool, call_id, "" if whole else "\n".join(old), "\n".join(new), whole))
        old.clear()
        new.clear()

    for line in body.split("\n"):
        header = _PATCH_HEADER.match(line)
        if header is not None:
            kind = header.group(1)
            if kind == "Move to":   # follows its Update File header: the hunks go to the new path
                path = header.group(2)
                continue
            flush()
            path, whole = (header.group(2), kind == "Add File") if kind != "Delete File" else (None, False)
            continue
        if line.startswith("@@") or line.startswith("*** End of File"):
            if not whole:
                flush()
            continue
        if line.startswith("+"):
            new.append(line[1:])
        elif line.startswith("-") and not whole:
            old.append(line[1:])
        elif line.startswith(" ") and not whole:
            old.append(line[1:])
            new.append(line[1:])
    flush()
    return edits


def call_edits(payload: dict[str, Any], name: str | None) -> list[EditCall]:
    """The text a tool-call item's ``apply_patch`` patch wrote (the shapes of :func:`call_touches`)."""
    kind = payload.get("type")
    call_id = nonempty_str(payload.get("call_id")) or nonempty_str(payload.get("id"))
    tool = name or "apply_patch"
    texts: list[str] = []
    if kind == "custom_tool_call" and isinstance(payload.get("input"), str):
        texts = [payload["input"]]
    elif kind == "local_shell_call":
        texts = _strings(as_dict(payload.get("action")) or {})
    elif kind == "function_call" and isinstance(payload.get("arguments"), str) and _PATCH_START in payload["arguments"]:
        raw = payload["arguments"]
        try:
            texts = _strings(json.loads(raw))
        except (ValueError, RecursionError):
            texts = [raw]
    return [edit for text in texts for edit in patch_edits(text, tool, call_id)]


def _strings(value: Any, depth: int = 0) -> list[str]:
    if isinstance(value, str):
        return [value]
    if depth > 4:
        return []
    if isinstance(value, list):
        return [text for item in value for text in _strings(item, depth + 1)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item, depth + 1)]
    return []


def call_touches(payload: dict[str, Any], name: str | None) -> list[FileTouch]:
    """The files a tool-call item touches, as it gives them (see the module doc)."""
    kind = payload.get("type")
    if kind == "custom_tool_call":
        raw = payload.get("input")
        return patch_touches(raw) if isinstance(raw, str) else []
    if kind == "local_shell_call":
        return [touch for text in _strings(as_dict(payload.get("action")) or {}) for touch in patch_touches(text)]
    if kind != "function_call":
        return []
    raw = payload.get("arguments")
    if not isinstance(raw, str) or (_PATCH_START not in raw and name not in PATH_TOOLS):
        return []
    try:
        arguments = json.loads(raw)
    except ValueError:
        return patch_touches(raw)
    touches = [touch for text in _strings(arguments) for touch in patch_touches(text)]
    if name in PATH_TOOLS and isinstance(arguments, dict):
        path = nonempty_str(arguments.get("path")) or nonempty_str(arguments.get("file_path"))
        if path:
            touches.append((path, PATH_TOOLS[name]))
    return touches


def is_subagent_meta(meta: dict[str, Any]) -> bool:
    """A spawned sub-agent thread: its ``session_id`` is the parent's, ``source`` says subagent."""
    source = meta.get("source")
    if isinstance(source, dict) and "subagent" in source:
        return True
    if nonempty_str(meta.get("parent_thread_id")) or meta.get("thread_source") == "subagent":
        return True
    group = nonempty_str(meta.get("session_id"))
    own = nonempty_str(meta.get("id"))
    return bool(group and own and group != own)


@dataclass
class CodexMessage:
    """One accepted user or assistant message, as the Codex → Pi migration copies it."""

    role: str
    text: str
    ts: int
    model: str | None
    provider: str | None


class CodexParser(TranscriptParser):
    source = "codex"
    interesting = re.compile(
        rb'"type"\s*:\s*"(?:session_meta|turn_context|response_item|task_started|message|function_call'
        rb'|custom_tool_call|local_shell_call|web_search_call)"')

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        state = state or {}
        self._info = SessionInfo.from_state(state)
        self._generation: str | None = saved(state, "generation", str)
        self._turns: int = saved(state, "turns", int, 0)
        self._current: str | None = saved(state, "current", str)
        self._id_prefix = "L"
        self._model_now: str | None = saved(state, "modelNow", str)
        self._provider: str | None = saved(state, "provider", str)
        self._task_seen: bool = saved(state, "taskSeen", bool, False)
        # The turn the latest task_started closed: a prompt of images only continues it (see _item). A state
        # another tool wrote may hold anything there: only a text the store can hold is a turn id.
        closed = state.get("closed")
        self._closed: str | None = closed if isinstance(closed, str) and is_storable(closed) else None

    def wants(self, line: Line) -> bool:
        if line.data is None or self._info.excluded:
            return False
        head = line.head
        if _SKIP_TYPES.match(head):
            return False
        if _SKIP_EVENT.match(head):
            return b"task_started" in head
        return _SKIP_PAYLOAD.search(head) is None

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        record = as_dict(record)
        if record is None:
            chunk.note_bad_line(line_number)
            return
        if self._generation is None:
            self._detect(record)
        if self._info.excluded:
            return
        if self._generation == "bare":
            if "id" in record and "type" not in record and self._info.native_id is None:
                self._meta(record)
            elif record.get("record_type") is None:
                self._item(record, line_number, self._info.started_at, chunk)
            return
        kind = record.get("type")
        payload = as_dict(record.get("payload"))
        if payload is None:
            return
        if kind == "session_meta":
            if self._info.native_id is None:
                self._meta(payload)
        elif kind == "turn_context":
            model = nonempty_str(payload.get("model"))
            if self._info.model_id is None:
                self._info.model_id = model
            self._model_now = model or self._model_now
            if not self._info.cwd and isinstance(payload.get("cwd"), str):
                self._info.cwd = clean_text(payload["cwd"])
        elif kind == "event_msg":
            if payload.get("type") == "task_started":
                self._closed = self._current or self._closed
                self._current = None
                self._task_seen = True
        elif kind == "response_item":
            ts = iso_to_ms(record.get("timestamp"))
            if self._info.native_id is None:
                # No session_meta (a minimal rollout): the file name gives the id, the first item the time.
                self._info.native_id = id_from_file_name(self.path)
                self._info.started_at = self._info.started_at or ts
            self._item(payload, line_number, ts, chunk)

    def _detect(self, record: dict[str, Any]) -> None:
        if "payload" in record and "type" in record:
            self._generation = "envelope"
        elif ("id" in record and "type" not in record) or record.get("type") == "message":
            self._generation = "bare"
        else:
            raise NotThisFormat("the first record is neither a session_meta envelope nor a rollout header")

    def _meta(self, meta: dict[str, Any]) -> None:
        self._info.native_id = nonempty_str(meta.get("id"))
        if isinstance(meta.get("cwd"), str):
            self._info.cwd = clean_text(meta["cwd"])
        self._info.started_at = iso_to_ms(meta.get("timestamp")) or self._info.started_at
        self._provider = nonempty_str(meta.get("model_provider"))
        self._info.agent_version = version_hint("Codex CLI", meta.get("cli_version")) or self._info.agent_version
        if is_subagent_meta(meta):
            self._info.excluded = "Codex sub-agent thread"

    def _item(self, payload: dict[str, Any], line_number: int, ts: int | None, chunk: Chunk) -> None:
        kind = payload.get("type")
        if kind == "message":
            role = payload.get("role")
            if role == "user":
                text = clean_text(user_text(payload))
                if not text and self._current is None and has_image(payload):
                    # Images sent without a word are no prompt (as in Claude Code and Pi): the reply to
                    # them continues the turn before, rather than going to no turn and being lost.
                    self._current = self._closed
                if not text or self._info.native_id is None:
                    return
                message_id = nonempty_str(payload.get("id")) or f"{self._id_prefix}{line_number}"
                ts = ts or self._info.started_at or 0
                chunk.start_turn(message_id, ts, text, self._turns, line_number)
                self._turns += 1
                self._current = self._closed = message_id
                self._log("user", text, ts)
            elif role == "assistant" and self._current is not None:
                text = clean_text(assistant_text(payload))
                chunk.add_reply(self._current, text, [])
                if text:
                    self._log("assistant", text, ts or self._info.started_at or 0)
            elif role == "assistant" and self._opens_with_assistant():
                text = clean_text(assistant_text(payload))
                if not text:
                    return
                message_id = nonempty_str(payload.get("id")) or f"{self._id_prefix}{line_number}"
                ts = ts or self._info.started_at or 0
                chunk.start_turn(message_id, ts, "", self._turns, line_number)
                chunk.add_reply(message_id, text, [])
                self._turns += 1
                self._current = message_id   # not logged: the Pi migration keeps starting with a prompt
            return
        name = tool_name(payload)
        if name and self._current is not None:
            chunk.add_reply(self._current, "", [name], call_touches(payload, name), call_edits(payload, name))

    def _opens_with_assistant(self) -> bool:
        """No turn yet and no task started: assistant text now opens the conversation (a task's text
        without a user message, such as a compaction summary, still goes to no turn)."""
        return self._turns == 0 and not self._task_seen and self._info.native_id is not None

    def _log(self, role: str, text: str, ts: int) -> None:
        """An accepted user or assistant message (see CodexMessageLog)."""

    def feed_document(self, document: Any, chunk: Chunk) -> None:
        """The 2025 TypeScript CLI's ``.json`` rollout: one object; item ids are ``I<index>``."""
        document = as_dict(document)
        if document is None:
            raise NotThisFormat("a .json rollout must be one JSON object")
        session = as_dict(document.get("session"))
        items = document.get("items")
        if session is None or not isinstance(items, list):
            raise NotThisFormat('a .json rollout needs "session" and "items"')
        self._generation = "json"
        self._meta(session)
        self._id_prefix = "I"
        for index, item in enumerate(items):
            item = as_dict(item)
            if item is not None:
                self._item(item, index, self._info.started_at, chunk)
        # G0 items carry no line numbers; the user message's line is unknown.
        for delta in chunk.turns.values():
            delta.line = None

    def session(self) -> SessionInfo:
        return self._info

    def state(self) -> dict[str, Any]:
        return {**self._info.to_state(), "generation": self._generation, "turns": self._turns,
                "current": self._current, "modelNow": self._model_now, "provider": self._provider,
                "taskSeen": self._task_seen, "closed": self._closed}


class CodexMessageLog(CodexParser):
    """The parser that also keeps every accepted user and assistant message, in order, with the model
    and provider in use then: what the Codex → Pi migration copies (the same filtering as the turns)."""

    def __init__(self, path: str) -> None:
        super().__init__(path, None)
        self.messages: list[CodexMessage] = []

    def _log(self, role: str, text: str, ts: int) -> None:
        self.messages.append(CodexMessage(role, text, ts, self._model_now, self._provider))
