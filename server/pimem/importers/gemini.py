"""Gemini CLI chats: ``<GEMINI_CLI_HOME or ~>/.gemini/tmp/<project>/chats/session-*.jsonl`` (and the legacy
whole-session ``session-*.json``).

Format facts this parser relies on (docs/formats.md section 5, from Gemini CLI's own reader and writer,
packages/core/src/services/chatRecordingService.ts and chatRecordingTypes.ts):

* the first line is the session's metadata (``sessionId``, ``projectHash``, ``startTime``, ``kind``); a
  ``{"$set": {...}}`` line patches it later;
* every other line with an ``id`` is a message ``{id, timestamp, type, content, displayContent?}``;
  ``type`` is ``user``, ``gemini``, ``info``, ``error`` or ``warning`` (only the first two are
  conversation). A message is written again, whole, under the same id when it changes (a ``gemini``
  message gains its tool calls, thoughts and tokens): the last line of an id wins, in the place of its
  first;
* ``{"$rewindTo": id}`` drops that message and every later one (the person went back to edit a prompt);
  Gemini CLI then appends the new prompt under a new id;
* a tool's result is recorded as a ``user`` message whose parts are ``functionResponse`` only (no text);
  the context Gemini CLI sends first (``<session_context>…``) is in a ``$set`` of ``messages`` (0.61), and
  would be no turn as a message either; resuming a session appends a second metadata line to its file;
* ``content`` is a string, a part ``{text}`` or a list of parts; a ``user`` message's ``displayContent``
  is what the person typed when ``content`` holds more (the files an ``@path`` pulled in);
* ``gemini`` messages carry ``toolCalls[{id, name, args, status, ...}]``; the file tools are
  ``read_file``, ``write_file`` and ``replace`` with ``args.file_path`` (``absolute_path`` in older
  versions);
* the folder is the project's: ``<project>/.project_root`` holds its path; else ``~/.gemini/projects.json``
  maps folders to project directory names (``{"projects": {path: slug}}``); an older project directory
  is named by the SHA-256 of the folder's path;
* sub-agent chats are ``chats/<parent session id>/<id>.jsonl`` and not named ``session-*``: not
  transcripts of their own (their work is in the parent's tool calls).

What pimem makes of it: one turn per ``user`` message (its id is the turn's), the text of the ``gemini``
messages up to the next ``user`` message as its reply (thoughts left out), their tool names and file
touches. A message written again replaces its earlier version in the turn. A rewind drops the replies
after its point from the turn being answered; turns already stored stay (pimem never deletes what was
typed).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from pimem.importers.base import (
    BadState,
    Chunk,
    FileAction,
    FileTouch,
    NotThisFormat,
    SessionInfo,
    TranscriptFiles,
    TranscriptParser,
    is_row,
    saved,
    saved_list,
)
from pimem.textutil import as_dict, as_list, clean_text, iso_to_ms, nonempty_str

RULES_VERSION = 1

# tool name -> what it does to the file named by its path argument
FILE_TOOLS: dict[str, FileAction] = {"read_file": "read", "write_file": "write", "replace": "edit"}
_PATH_ARGS = ("file_path", "absolute_path", "path")
_PROJECT_FILE_MAX_BYTES = 1 << 20   # .project_root and projects.json are small; a larger one is not read
_INJECTED = ("<session_context>",)   # the environment Gemini CLI sends as a first "user" message


class GeminiFiles(TranscriptFiles):
    """``chats/session-*.jsonl`` and the legacy ``chats/session-*.json`` (one JSON document); sub-agent
    chats (``chats/<parent>/<id>.jsonl``) are not named ``session-*``."""

    document_max_bytes = 256 * 1024 * 1024
    document_name = "a legacy Gemini CLI session (.json)"

    def wants(self, name: str) -> bool:
        return name.startswith("session-") and name.endswith((".jsonl", ".json"))

    def is_document(self, path: str) -> bool:
        return path.endswith(".json") and self.wants(os.path.basename(path))


FILES = GeminiFiles()

# Lines a turn needs: messages, rewinds, metadata and its patches (every kind of line, in practice).
_INTERESTING = re.compile(rb'"(?:id|\$rewindTo|\$set|sessionId)"')


def part_text(content: Any) -> str:
    """The text of a ``PartListUnion``: a string, a part, or a list of both (parts without text, such as
    function calls and inline data, give nothing)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if content.get("thought") is True:
            return ""
        text = content.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(content, list):
        return "\n".join(text for text in (part_text(part) for part in content) if text)
    return ""


def _tool_calls(record: dict[str, Any]) -> tuple[list[str], list[FileTouch]]:
    names: list[str] = []
    touches: list[FileTouch] = []
    for call in as_list(record.get("toolCalls")):
        call = as_dict(call)
        if call is None:
            continue
        name = nonempty_str(call.get("name"))
        if name is None:
            continue
        if name not in names:
            names.append(name)
        action = FILE_TOOLS.get(name)
        args = as_dict(call.get("args"))
        if action is None or args is None:
            continue
        path = next((args[key] for key in _PATH_ARGS if isinstance(args.get(key), str) and args[key]), None)
        if path is not None and (path, action) not in touches:
            touches.append((path, action))
    return names, touches


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_PROJECT_FILE_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > _PROJECT_FILE_MAX_BYTES:
        return None
    return data.decode("utf-8", "replace")


def project_folder(transcript: str) -> str:
    """The folder of the project a chat file belongs to (``<tmp>/<project>/chats/<file>``), or "" when
    nothing says it."""
    project_dir = os.path.dirname(os.path.dirname(transcript))
    root = _read_small(os.path.join(project_dir, ".project_root"))
    if root is not None and root.strip() and "\0" not in root:
        return clean_text(root.strip())
    registry = _read_small(os.path.join(os.path.dirname(os.path.dirname(project_dir)), "projects.json"))
    if registry is None:
        return ""
    try:
        projects = (as_dict(json.loads(registry)) or {}).get("projects")
    except (ValueError, RecursionError):
        return ""
    name = os.path.basename(project_dir)
    for folder, slug in (as_dict(projects) or {}).items():
        if not isinstance(folder, str) or "\0" in folder:
            continue
        if slug == name or hashlib.sha256(folder.encode("utf-8")).hexdigest() == name:
            return clean_text(folder)
    return ""


def _is_reply(value: Any) -> bool:
    """A saved reply: [message id, text, tool names, touches ([path, action] each)]."""
    return is_row(str, str, list, list)(value) and all(isinstance(name, str) for name in value[2]) \
        and all(is_row(str, str)(touch) for touch in value[3])


class GeminiParser(TranscriptParser):
    source = "gemini"
    interesting = _INTERESTING

    def __init__(self, path: str, state: dict[str, Any] | None, lookup: Any = None) -> None:
        super().__init__(path, state, lookup)
        state = state or {}
        self._info = SessionInfo.from_state(state)
        self._turns: int = saved(state, "turns", int, 0)
        # The turn being answered: [user id, ts, text, turn index, line] and its replies in order:
        # [[message id, text, tool names, touches]].
        current = saved(state, "current", list)
        if current is not None and not (is_row(str, int, str, int, None)(current)
                                        and isinstance(current[4], int | None)):
            raise BadState("current")
        self._current: list[Any] | None = current
        self._replies: list[list[Any]] = list(saved_list(state, "replies", _is_reply) or [])
        self._folder_checked: bool = saved(state, "folderChecked", bool, False)

    def feed(self, record: Any, line_number: int, chunk: Chunk) -> None:
        record = as_dict(record)
        if record is None:
            chunk.note_bad_line(line_number)
            return
        if "$rewindTo" in record:
            self._rewind(record.get("$rewindTo"), chunk)
            return
        if "$set" in record:
            self._metadata(as_dict(record.get("$set")) or {})
            return
        if not isinstance(record.get("id"), str):
            if isinstance(record.get("sessionId"), str):
                self._metadata(record)
            return
        self._message(record, line_number, chunk)

    def feed_document(self, document: Any, chunk: Chunk) -> None:
        """A legacy session: ``{sessionId, projectHash, startTime, lastUpdated, messages: [...]}``."""
        record = as_dict(document)
        if record is None or not isinstance(record.get("sessionId"), str):
            raise NotThisFormat("not a Gemini CLI session (no sessionId)")
        self._metadata(record)
        for message in as_list(record.get("messages")):
            message = as_dict(message)
            if message is not None and isinstance(message.get("id"), str):
                self._message(message, None, chunk)

    # -- records ------------------------------------------------------------------------------
    def _metadata(self, record: dict[str, Any]) -> None:
        if self._info.native_id is None:
            self._info.native_id = nonempty_str(record.get("sessionId"))
        if self._info.started_at is None:
            self._info.started_at = iso_to_ms(record.get("startTime"))
        if record.get("kind") == "subagent":
            self._info.excluded = "a Gemini CLI sub-agent chat"
        if not self._folder_checked:
            self._folder_checked = True
            self._info.cwd = project_folder(self.path)

    def _message(self, record: dict[str, Any], line_number: int | None, chunk: Chunk) -> None:
        kind = record.get("type")
        message_id = record["id"]
        ts = iso_to_ms(record.get("timestamp"))
        if kind == "user":
            shown = record.get("displayContent")
            text = clean_text(part_text(shown if shown is not None else record.get("content"))).strip()
            if not text or self._info.native_id is None or text.startswith(_INJECTED):
                return   # a tool result (functionResponse parts only), or the context Gemini CLI sends
            if self._current is not None and self._current[0] == message_id:
                self._current[1:3] = [ts if ts is not None else self._current[1], text]   # written again
            else:
                self._current = [message_id, ts if ts is not None else (self._info.started_at or 0), text,
                                 self._turns, line_number]
                self._replies = []
                self._turns += 1
            self._emit(chunk)
            return
        if kind != "gemini" or self._current is None:
            return
        if self._info.model_id is None:
            self._info.model_id = nonempty_str(record.get("model"))
        tools, touches = _tool_calls(record)
        reply = [message_id, clean_text(part_text(record.get("content"))), tools, [list(t) for t in touches]]
        for position, existing in enumerate(self._replies):
            if existing[0] == message_id:
                self._replies[position] = reply   # the last version of a message wins, in its place
                break
        else:
            self._replies.append(reply)
        self._emit(chunk)

    def _rewind(self, target: Any, chunk: Chunk) -> None:
        if self._current is None:
            return
        if target == self._current[0]:
            self._current, self._replies = None, []
            return
        for position, reply in enumerate(self._replies):
            if reply[0] == target:
                del self._replies[position:]
                self._emit(chunk)
                return
        self._current, self._replies = None, []   # an earlier (or unknown) message: the turn is over

    def _emit(self, chunk: Chunk) -> None:
        """The current turn, whole (it replaces what was stored of it)."""
        assert self._current is not None
        message_id, ts, text, turn_index, line_number = self._current
        chunk.start_turn(message_id, ts, text, turn_index, line_number)
        for _, reply_text, tools, touches in self._replies:
            chunk.add_reply(message_id, reply_text, tools, [(path, action) for path, action in touches])

    def session(self) -> SessionInfo:
        return self._info

    def state(self) -> dict[str, Any]:
        return {**self._info.to_state(), "turns": self._turns, "current": self._current,
                "replies": self._replies, "folderChecked": self._folder_checked}
